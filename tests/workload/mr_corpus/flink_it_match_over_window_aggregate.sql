-- source: apache/flink flink-table/flink-table-planner/src/test/java/org/apache/flink/table/planner/runtime/batch/sql/MatchRecognizeITCase.java (testMatchRecognizeAppliedToWindowedGrouping)
-- expect: refused at FROM
-- within: 1000
SELECT *
FROM (
   SELECT
      symbol,
      SUM(price) as price,
      TUMBLE_ROWTIME(ts, interval '3' second) as rowTime,
      TUMBLE_START(ts, interval '3' second) as startTime
   FROM Ticker
   GROUP BY symbol, TUMBLE(ts, interval '3' second)
)
MATCH_RECOGNIZE (
  PARTITION BY symbol
  ORDER BY rowTime
  MEASURES
    B.price as dPrice,
    B.startTime as dTime
  ONE ROW PER MATCH
  PATTERN (A B)
  DEFINE
    B AS B.price < A.price
)
