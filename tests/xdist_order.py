"""The order in which `--dist loadgroup` hands the test groups to the two workers: the
SparkSession group first, then the files whose tests start Java of their own (marked
`own_jvm`), then the rest in xdist's order (the groups with the most tests first). xdist's
order alone leaves the one- and two-test files that run spark-submit for tens of seconds to
the very end, where one worker runs the last of them while the other has nothing left."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

from xdist.scheduler import LoadGroupScheduling

SESSION_GROUP = "spark"  # the group of the files sharing the session's SparkSession
OWN_JVM = "own-jvm/"  # the prefix of the group of a file marked `own_jvm`


def java_first(groups: Iterable[str]) -> list[str]:
    """`groups` in the order to hand them out: the SparkSession group, then the own-JVM
    files, then the others, each part kept in the order given."""
    def rank(group: str) -> int:
        return 0 if group == SESSION_GROUP else 1 if group.startswith(OWN_JVM) else 2
    return sorted(groups, key=rank)


class JavaFirstScheduling(LoadGroupScheduling):
    """xdist's `loadgroup` scheduling, its queue of groups reordered by `java_first`."""

    def _assign_work_unit(self, node) -> None:
        self.workqueue = OrderedDict((group, self.workqueue[group])
                                     for group in java_first(self.workqueue))
        super()._assign_work_unit(node)
