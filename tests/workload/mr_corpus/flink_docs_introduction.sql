-- source: apache/flink docs/content/docs/dev/table/sql/queries/match_recognize.md (the introduction's example)
-- adapted: the page shows no rows: the sample is ours
-- expect: runs
-- within: 1000
SELECT T.aid, T.bid, T.cid
FROM MyTable
    MATCH_RECOGNIZE (
      PARTITION BY userid
      ORDER BY proctime
      MEASURES
        A.id AS aid,
        B.id AS bid,
        C.id AS cid
      PATTERN (A B C)
      DEFINE
        A AS name = 'a',
        B AS name = 'b',
        C AS name = 'c'
    ) AS T
