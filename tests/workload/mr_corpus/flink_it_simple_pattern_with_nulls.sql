-- source: apache/flink flink-table/flink-table-planner/src/test/java/org/apache/flink/table/planner/runtime/batch/sql/MatchRecognizeITCase.java (testSimplePatternWithNulls)
-- adapted: nullField holds 'x' on rows 4 and 9 (no match reads them) so that the sample has a type for it
-- expect: refused at DEFINE A
-- within: 1000
SELECT T.aid, T.bNull, T.cid, T.aNull
FROM MyTable
MATCH_RECOGNIZE (
  ORDER BY ts
  MEASURES
    A.id AS aid,
    A.nullField AS aNull,
    LAST(B.nullField) AS bNull,
    C.id AS cid
  PATTERN (A B C)
  DEFINE
    A AS name = 'a' AND nullField IS NULL,
    B AS name = 'b' AND LAST(A.nullField) IS NULL,
    C AS name = 'c'
) AS T
