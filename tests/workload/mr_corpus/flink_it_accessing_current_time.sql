-- source: apache/flink flink-table/flink-table-planner/src/test/java/org/apache/flink/table/planner/runtime/batch/sql/MatchRecognizeITCase.java (testAccessingCurrentTime)
-- adapted: PROCTIME() is the sample's proctime column
-- expect: refused at DEFINE A
SELECT T.aid
FROM MyTable
MATCH_RECOGNIZE (
  ORDER BY proctime
  MEASURES
    A.id AS aid,
    A.proctime AS aProctime,
    LAST(A.proctime + INTERVAL '1' second) as calculatedField
  PATTERN (A)
  DEFINE
    A AS proctime >= (CURRENT_TIMESTAMP - INTERVAL '1' day)
) AS T
