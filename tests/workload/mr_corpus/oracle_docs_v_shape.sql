-- source: https://docs.oracle.com/database/121/DWHSG/pattern.htm (Example 20-1, Pattern Match: Simple V-Shape with 1 Row Output per Match)
-- adapted: tstamp as the day of April 2011; the ACME rows of the page's table
-- expect: runs
-- within: 10
-- peer matches: 5 6 7 8 9 10;10 11 12 13;14 15 16 17 18
SELECT *
FROM Ticker MATCH_RECOGNIZE (
     PARTITION BY symbol
     ORDER BY tstamp
     MEASURES  STRT.tstamp AS start_tstamp,
               LAST(DOWN.tstamp) AS bottom_tstamp,
               LAST(UP.tstamp) AS end_tstamp
     ONE ROW PER MATCH
     AFTER MATCH SKIP TO LAST UP
     PATTERN (STRT DOWN+ UP+)
     DEFINE
        DOWN AS DOWN.price < PREV(DOWN.price),
        UP AS UP.price > PREV(UP.price)
     ) MR
ORDER BY MR.symbol, MR.start_tstamp
