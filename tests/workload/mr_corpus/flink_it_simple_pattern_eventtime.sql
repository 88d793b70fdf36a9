-- source: apache/flink flink-table/flink-table-planner/src/test/java/org/apache/flink/table/planner/runtime/batch/sql/MatchRecognizeITCase.java (testSimplePatternInEventTime)
-- adapted: the quoted variable `A"` is written A and \u006C as l; ts in seconds after 12:00
-- expect: runs
-- within: 1000
-- peer matches: 6 7 8
SELECT T.aid, T.bid, T.cid
FROM MyTable
MATCH_RECOGNIZE (
  ORDER BY ts
  MEASURES
    A.id AS aid,
    l.id AS bid,
    C.id AS cid
  PATTERN (A l C)
  DEFINE
    A AS name = 'a',
    l AS name = 'b',
    C AS name = 'c'
) AS T
