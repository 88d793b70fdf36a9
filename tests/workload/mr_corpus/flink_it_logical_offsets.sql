-- source: apache/flink flink-table/flink-table-planner/src/test/java/org/apache/flink/table/planner/runtime/batch/sql/MatchRecognizeITCase.java (testLogicalOffsets)
-- adapted: ts, computed from tstamp in the test, is a column of the sample
-- expect: refused at DEFINE DOWN
SELECT *
FROM Ticker
MATCH_RECOGNIZE (
  ORDER BY ts
  MEASURES
    FIRST(DOWN.tstamp) AS start_tstamp,
    LAST(DOWN.tstamp) AS bottom_tstamp,
    UP.tstamp AS end_tstamp,
    FIRST(DOWN.price + DOWN.tax + 1) AS bottom_total,
    UP.price + UP.tax AS end_total
  ONE ROW PER MATCH
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (DOWN{2,} UP)
  DEFINE
    DOWN AS price < LAST(DOWN.price, 1) OR LAST(DOWN.price, 1) IS NULL,
    UP AS price < FIRST(DOWN.price)
) AS T
