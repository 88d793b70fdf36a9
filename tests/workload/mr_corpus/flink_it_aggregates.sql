-- source: apache/flink flink-table/flink-table-planner/src/test/java/org/apache/flink/table/planner/runtime/batch/sql/MatchRecognizeITCase.java (testAggregates)
-- expect: refused at DEFINE A
SELECT *
FROM MyTable
MATCH_RECOGNIZE (
  ORDER BY ts
  MEASURES
    FIRST(id) as startId,
    SUM(A.price) AS sumA,
    COUNT(D.price) AS countD,
    SUM(D.price) as sumD,
    weightedAvg(price, weight) as wAvg,
    AVG(B.price) AS avgB,
    SUM(B.price * B.rate) as sumExprB,
    LAST(id) as endId
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A+ B+ C D? E)
  DEFINE
    A AS SUM(A.price) < 6,
    B AS SUM(B.price * B.rate) < SUM(A.price) AND
      SUM(B.price * B.rate) > 0.2 AND
      SUM(B.price) >= 1 AND
      AVG(B.price) >= 1 AND
      weightedAvg(price, weight) > 1
) AS T
