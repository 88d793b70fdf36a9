-- source: apache/flink flink-table/flink-table-planner/src/test/java/org/apache/flink/table/planner/runtime/batch/sql/MatchRecognizeITCase.java (testPartitionByWithParallelSource)
-- expect: runs
-- within: 1000
-- peer matches: 3 4
SELECT *
FROM Ticker
MATCH_RECOGNIZE (
  PARTITION BY symbol
  ORDER BY ts
  MEASURES
    DOWN.tax AS bottom_tax,
    UP.tax AS end_tax
  ONE ROW PER MATCH
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (DOWN UP)
  DEFINE
    DOWN AS DOWN.price = 13,
    UP AS UP.price = 20
) AS T
