-- source: https://issues.apache.org/jira/browse/FLINK-7062 (the first MATCH_RECOGNIZE Flink ran)
-- expect: refused at ORDER BY
SELECT T.aid, T.bid, T.cid FROM MyTable MATCH_RECOGNIZE (
    MEASURES A.id AS aid, B.id AS bid, C.id AS cid
    PATTERN (A B C)
    DEFINE A AS A.name = 'a', B AS B.name = 'b', C AS C.name = 'c') AS T
