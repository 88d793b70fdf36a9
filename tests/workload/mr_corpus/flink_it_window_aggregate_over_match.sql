-- source: apache/flink flink-table/flink-table-planner/src/test/java/org/apache/flink/table/planner/runtime/batch/sql/MatchRecognizeITCase.java (testWindowedGroupingAppliedToMatchRecognize)
-- expect: refused at GROUP
SELECT
  symbol,
  SUM(price) as price,
  TUMBLE_ROWTIME(matchRowtime, interval '3' second) as rowTime,
  TUMBLE_START(matchRowtime, interval '3' second) as startTime
FROM Ticker
MATCH_RECOGNIZE (
  PARTITION BY symbol
  ORDER BY ts
  MEASURES
    A.price as price,
    A.tax as tax,
    MATCH_ROWTIME() as matchRowtime
  ONE ROW PER MATCH
  PATTERN (A)
  DEFINE
    A AS A.price > 0
) AS T
GROUP BY symbol, TUMBLE(matchRowtime, interval '3' second)
