-- Realistic SQLite queries in the style of LLM text-to-SQL answers, for tests/test_sqlite_oracle.py:
-- first queries as LLMs write them, then the slips they make (ids slip-*; a few of those parse).
-- Each query is the text after a header line "-- # <id>: <what it is>", up to the next header,
-- without trailing blank lines. sqlite3 itself decides which ones parse, not this file.

-- # basic-select: columns with a filter
SELECT id, name, email FROM users WHERE active = 1;

-- # basic-star-limit: everything, first rows
SELECT * FROM products LIMIT 10;

-- # count-all: how many rows
SELECT COUNT(*) FROM orders;

-- # count-distinct: distinct customers who ordered
SELECT COUNT(DISTINCT customer_id) AS num_customers FROM orders;

-- # order-desc-limit: top five by spend
SELECT customer_id, SUM(total) AS total_spent
FROM orders
GROUP BY customer_id
ORDER BY total_spent DESC
LIMIT 5;

-- # spider-join-alias: Spider-style T1/T2 aliases
SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.singer_id WHERE T2.year = 2014;

-- # spider-count-group: Spider-style count per group
SELECT T2.name, count(*) FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id GROUP BY T1.stadium_id;

-- # spider-not-in: not in a subquery
SELECT name FROM stadium WHERE stadium_id NOT IN (SELECT stadium_id FROM concert);

-- # spider-intersect: intersect of two selects
SELECT name FROM singer WHERE age > 40 INTERSECT SELECT name FROM singer WHERE age < 30;

-- # spider-except: except
SELECT country FROM singer EXCEPT SELECT country FROM singer WHERE age > 40;

-- # spider-union: union of two filters
SELECT name FROM employee WHERE city = 'Bristol' UNION SELECT name FROM employee WHERE city = 'Bath';

-- # left-join-null: customers without orders
SELECT c.name
FROM customers c
LEFT JOIN orders o ON o.customer_id = c.id
WHERE o.id IS NULL;

-- # left-outer-join: spelled out
SELECT c.name, o.order_date
FROM customers AS c
LEFT OUTER JOIN orders AS o ON c.id = o.customer_id
ORDER BY c.name;

-- # inner-join-three: three tables
SELECT s.name, c.title, e.grade
FROM students s
INNER JOIN enrollments e ON e.student_id = s.id
INNER JOIN courses c ON c.id = e.course_id
WHERE e.grade >= 'B';

-- # join-using: USING clause
SELECT order_id, product_name, quantity FROM order_items JOIN products USING (product_id);

-- # natural-join: natural join
SELECT * FROM departments NATURAL JOIN employees;

-- # cross-join: cartesian product
SELECT a.color, b.size FROM colors a CROSS JOIN sizes b;

-- # right-join: right join (3.39+)
SELECT e.name, d.name AS department FROM employees e RIGHT JOIN departments d ON e.dept_id = d.id;

-- # full-outer-join: full outer join (3.39+)
SELECT COALESCE(a.id, b.id) AS id, a.value AS old_value, b.value AS new_value
FROM old_data a FULL OUTER JOIN new_data b ON a.id = b.id;

-- # comma-join: old-style join
SELECT e.name, d.name FROM employees e, departments d WHERE e.dept_id = d.id;

-- # self-join: managers
SELECT e.name AS employee, m.name AS manager
FROM employees e
LEFT JOIN employees m ON e.manager_id = m.id;

-- # group-having: departments with many employees
SELECT department, COUNT(*) AS n
FROM employees
GROUP BY department
HAVING COUNT(*) > 10
ORDER BY n DESC;

-- # avg-round: average salary rounded
SELECT department, ROUND(AVG(salary), 2) AS avg_salary FROM employees GROUP BY department;

-- # case-when: grade buckets
SELECT name,
       CASE
           WHEN score >= 90 THEN 'A'
           WHEN score >= 80 THEN 'B'
           WHEN score >= 70 THEN 'C'
           ELSE 'F'
       END AS grade
FROM students;

-- # case-simple: simple case
SELECT order_id, CASE status WHEN 'P' THEN 'pending' WHEN 'S' THEN 'shipped' ELSE 'other' END AS status_name FROM orders;

-- # sum-case: conditional aggregation
SELECT
    SUM(CASE WHEN gender = 'F' THEN 1 ELSE 0 END) AS female,
    SUM(CASE WHEN gender = 'M' THEN 1 ELSE 0 END) AS male
FROM patients;

-- # cte-basic: one CTE
WITH recent AS (
    SELECT * FROM orders WHERE order_date >= date('now', '-30 days')
)
SELECT customer_id, COUNT(*) AS orders_last_month
FROM recent
GROUP BY customer_id;

-- # cte-two: two CTEs
WITH totals AS (
    SELECT customer_id, SUM(amount) AS total FROM payments GROUP BY customer_id
), ranked AS (
    SELECT customer_id, total, RANK() OVER (ORDER BY total DESC) AS rnk FROM totals
)
SELECT customer_id, total FROM ranked WHERE rnk <= 3;

-- # cte-recursive: counting
WITH RECURSIVE cnt(x) AS (
    SELECT 1
    UNION ALL
    SELECT x + 1 FROM cnt WHERE x < 10
)
SELECT x FROM cnt;

-- # cte-recursive-tree: org chart
WITH RECURSIVE subordinates(id, name, level) AS (
    SELECT id, name, 0 FROM employees WHERE manager_id IS NULL
    UNION ALL
    SELECT e.id, e.name, s.level + 1
    FROM employees e
    JOIN subordinates s ON e.manager_id = s.id
)
SELECT * FROM subordinates ORDER BY level, name;

-- # cte-materialized: materialized hint
WITH big AS MATERIALIZED (SELECT * FROM sales WHERE amount > 1000)
SELECT region, COUNT(*) FROM big GROUP BY region;

-- # cte-not-materialized: not materialized hint
WITH small AS NOT MATERIALIZED (SELECT id FROM sales WHERE amount < 10)
SELECT COUNT(*) FROM small;

-- # window-row-number: row number per group
SELECT id, department, salary,
       ROW_NUMBER() OVER (PARTITION BY department ORDER BY salary DESC) AS rn
FROM employees;

-- # window-top-n: top 3 per department
SELECT * FROM (
    SELECT name, department, salary,
           DENSE_RANK() OVER (PARTITION BY department ORDER BY salary DESC) AS rnk
    FROM employees
) WHERE rnk <= 3;

-- # window-running-total: running sum
SELECT order_date, amount,
       SUM(amount) OVER (ORDER BY order_date ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running_total
FROM orders;

-- # window-moving-average: 7-day moving average
SELECT day, AVG(visits) OVER (ORDER BY day ROWS BETWEEN 6 PRECEDING AND CURRENT ROW) AS ma7 FROM daily_visits;

-- # window-lag-lead: previous and next
SELECT month, revenue,
       LAG(revenue, 1) OVER (ORDER BY month) AS prev_revenue,
       LEAD(revenue) OVER (ORDER BY month) AS next_revenue
FROM monthly_revenue;

-- # window-growth: month over month growth
SELECT month,
       revenue,
       (revenue - LAG(revenue) OVER (ORDER BY month)) * 100.0 / LAG(revenue) OVER (ORDER BY month) AS growth_pct
FROM monthly_revenue;

-- # window-named: WINDOW clause
SELECT name, salary, RANK() OVER w AS r, PERCENT_RANK() OVER w AS pr
FROM employees
WINDOW w AS (PARTITION BY department ORDER BY salary DESC);

-- # window-ntile: quartiles
SELECT customer_id, total, NTILE(4) OVER (ORDER BY total) AS quartile FROM customer_totals;

-- # window-first-value: first value in partition
SELECT DISTINCT department, FIRST_VALUE(name) OVER (PARTITION BY department ORDER BY hire_date) AS first_hire FROM employees;

-- # window-range: range frame
SELECT ts, SUM(bytes) OVER (ORDER BY ts RANGE BETWEEN 60 PRECEDING AND CURRENT ROW) AS last_minute FROM traffic;

-- # window-exclude: frame exclusion
SELECT id, AVG(score) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING EXCLUDE CURRENT ROW) AS neighbours_avg FROM scores;

-- # window-count-star: total rows alongside
SELECT name, COUNT(*) OVER () AS total_rows FROM cities;

-- # window-nulls-last: nulls last in window order
SELECT name, RANK() OVER (ORDER BY last_login DESC NULLS LAST) AS r FROM users;

-- # filter-clause: aggregate FILTER
SELECT COUNT(*) FILTER (WHERE status = 'active') AS active_users,
       COUNT(*) FILTER (WHERE status = 'banned') AS banned_users
FROM users;

-- # filter-and-over: FILTER then OVER
SELECT day, SUM(amount) FILTER (WHERE amount > 0) OVER (ORDER BY day) AS income_to_date FROM ledger;

-- # subquery-scalar: above average
SELECT name, salary FROM employees WHERE salary > (SELECT AVG(salary) FROM employees);

-- # subquery-correlated: latest order per customer
SELECT o.* FROM orders o
WHERE o.order_date = (SELECT MAX(o2.order_date) FROM orders o2 WHERE o2.customer_id = o.customer_id);

-- # subquery-exists: customers with an order
SELECT name FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id);

-- # subquery-not-exists: products never ordered
SELECT p.name FROM products p WHERE NOT EXISTS (SELECT 1 FROM order_items oi WHERE oi.product_id = p.id);

-- # subquery-from: derived table
SELECT dept, avg_sal FROM (SELECT department AS dept, AVG(salary) AS avg_sal FROM employees GROUP BY department) t WHERE avg_sal > 50000;

-- # subquery-in-select: count in select list
SELECT c.name, (SELECT COUNT(*) FROM orders o WHERE o.customer_id = c.id) AS order_count FROM customers c;

-- # in-list: in a list of values
SELECT * FROM orders WHERE status IN ('shipped', 'delivered') AND total > 100;

-- # between-dates: between two dates
SELECT * FROM orders WHERE order_date BETWEEN '2023-01-01' AND '2023-12-31';

-- # not-between: not between
SELECT name FROM products WHERE price NOT BETWEEN 10 AND 20;

-- # like-prefix: like
SELECT * FROM customers WHERE email LIKE '%@gmail.com';

-- # not-like: not like
SELECT title FROM books WHERE title NOT LIKE 'The %';

-- # like-escape: like with escape
SELECT * FROM files WHERE path LIKE '%\_backup%' ESCAPE '\';

-- # glob: glob pattern
SELECT name FROM files WHERE name GLOB '*.csv';

-- # is-null: is null and is not null
SELECT id FROM users WHERE phone IS NULL AND email IS NOT NULL;

-- # coalesce: coalesce and ifnull
SELECT name, COALESCE(nickname, first_name, 'unknown') AS display, IFNULL(phone, '-') FROM people;

-- # nullif: avoid division by zero
SELECT region, sales / NULLIF(target, 0) AS attainment FROM targets;

-- # iif: iif function
SELECT name, IIF(stock > 0, 'in stock', 'sold out') AS availability FROM products;

-- # cast-real: percentage with cast
SELECT CAST(SUM(CASE WHEN churned = 1 THEN 1 ELSE 0 END) AS REAL) * 100 / COUNT(*) AS churn_rate FROM customers;

-- # cast-integer: cast to integer
SELECT CAST(strftime('%Y', birth_date) AS INTEGER) AS birth_year FROM people;

-- # cast-text: cast to text
SELECT CAST(id AS TEXT) || '-' || name AS label FROM items;

-- # cast-varchar: type with size
SELECT CAST(price AS DECIMAL(10, 2)) FROM products;

-- # strftime-year: group by year
SELECT strftime('%Y', order_date) AS year, COUNT(*) AS orders FROM orders GROUP BY year ORDER BY year;

-- # strftime-month: monthly revenue
SELECT strftime('%Y-%m', created_at) AS month, SUM(amount) AS revenue
FROM payments
WHERE created_at >= '2024-01-01'
GROUP BY 1
ORDER BY 1;

-- # date-now: date arithmetic
SELECT * FROM subscriptions WHERE end_date < date('now') AND end_date >= date('now', '-7 days');

-- # julianday: days between
SELECT id, julianday(shipped_at) - julianday(ordered_at) AS days_to_ship FROM orders;

-- # datetime-localtime: datetime modifiers
SELECT datetime(created_at, 'unixepoch', 'localtime') AS created FROM events;

-- # date-weekday: weekday name
SELECT CASE strftime('%w', day) WHEN '0' THEN 'Sunday' WHEN '6' THEN 'Saturday' ELSE 'Weekday' END AS kind FROM calendar;

-- # current-timestamp: current_timestamp keyword
SELECT id, CURRENT_TIMESTAMP AS checked_at, CURRENT_DATE FROM jobs;

-- # string-functions: common string functions
SELECT UPPER(first_name) || ' ' || LOWER(last_name) AS full_name, LENGTH(email), SUBSTR(phone, 1, 3) AS area_code FROM contacts;

-- # instr-replace: instr and replace
SELECT REPLACE(url, 'http://', 'https://') AS secure_url, INSTR(url, '?') AS query_pos FROM links;

-- # trim: trim variants
SELECT TRIM(name), LTRIM(code, '0'), RTRIM(notes) FROM records;

-- # group-concat: group_concat
SELECT author_id, GROUP_CONCAT(title, ', ') AS titles FROM books GROUP BY author_id;

-- # printf: printf formatting
SELECT printf('%.2f', amount) AS formatted, format('%d items', qty) FROM line_items;

-- # min-max: min and max
SELECT MIN(price) AS cheapest, MAX(price) AS priciest, AVG(price) AS average FROM products;

-- # total-sum: total()
SELECT TOTAL(amount) FROM refunds WHERE refunded_at IS NOT NULL;

-- # abs-round: math functions
SELECT ABS(balance), ROUND(interest_rate * 100, 1) AS rate_pct FROM accounts;

-- # offset: limit and offset
SELECT id, title FROM articles ORDER BY published_at DESC LIMIT 20 OFFSET 40;

-- # limit-comma: limit with comma
SELECT id FROM articles ORDER BY id LIMIT 40, 20;

-- # distinct: distinct values
SELECT DISTINCT country FROM customers ORDER BY country;

-- # order-multiple: several sort keys
SELECT * FROM employees ORDER BY department ASC, salary DESC, name;

-- # order-nulls-first: nulls first
SELECT name, deadline FROM tasks ORDER BY deadline NULLS FIRST;

-- # order-collate: collate nocase
SELECT name FROM users ORDER BY name COLLATE NOCASE;

-- # where-collate: comparison with collate
SELECT * FROM users WHERE username = 'Admin' COLLATE NOCASE;

-- # quoted-identifiers: double quotes
SELECT "first name", "last name" FROM "customer data" WHERE "customer id" = 7;

-- # backtick-identifiers: BIRD-style backticks
SELECT `School Name`, `Free Meal Count (K-12)` / `Enrollment (K-12)` AS rate FROM frpm WHERE `County Name` = 'Alameda' ORDER BY rate DESC LIMIT 1;

-- # bracket-identifiers: brackets
SELECT [Order ID], [Unit Price] * Quantity AS [Line Total] FROM [Order Details];

-- # string-alias: alias as a string
SELECT COUNT(*) AS 'total count' FROM visits;

-- # string-alias-bare: bare string alias
SELECT name 'customer name' FROM customers;

-- # params-qmark: qmark parameters
SELECT * FROM users WHERE id = ? AND status = ?;

-- # params-named: named parameters
SELECT * FROM events WHERE start_time >= :start AND end_time < :end AND owner = @owner;

-- # params-numbered: numbered parameters
SELECT * FROM pairs WHERE a = ?1 AND b = ?2 OR a = ?2;

-- # hex-literal: hex number
SELECT id FROM flags WHERE mask & 0x1F = 0x10;

-- # exponent-literal: exponent
SELECT * FROM measurements WHERE value < 1.5E-3 OR value > 2e6;

-- # blob-literal: blob
SELECT * FROM keys WHERE key_bytes = x'DEADBEEF';

-- # bit-ops: bitwise operators
SELECT id, flags | 4 AS with_flag, flags >> 1, ~flags FROM settings;

-- # concat-operator: || concatenation
SELECT city || ', ' || country AS place FROM addresses;

-- # modulo: even ids
SELECT * FROM rows_table WHERE id % 2 = 0;

-- # not-equal-variants: != and <>
SELECT * FROM t WHERE a != 1 AND b <> 2 AND c == 3;

-- # json-extract: json_extract
SELECT json_extract(payload, '$.user.id') AS user_id FROM webhooks;

-- # json-arrow: -> and ->> (3.38+)
SELECT payload ->> '$.user.name' AS user_name, payload -> '$.items' AS items FROM webhooks;

-- # json-arrow-tight: ->> without blanks
SELECT data->>'name' FROM docs WHERE data->>'type' = 'invoice';

-- # json-each: table-valued function
SELECT j.value FROM orders, json_each(orders.items) AS j WHERE j.key = 'sku';

-- # is-distinct-from: null-safe comparison (3.39+)
SELECT * FROM pairs WHERE old_value IS DISTINCT FROM new_value;

-- # is-not-distinct-from: null-safe equality (3.39+)
SELECT * FROM pairs WHERE a IS NOT DISTINCT FROM b;

-- # postfix-notnull: NOTNULL and ISNULL
SELECT * FROM users WHERE email NOTNULL AND phone ISNULL;

-- # postfix-not-null: NOT NULL as postfix
SELECT count(*) FROM users WHERE deleted_at NOT NULL;

-- # values-basic: VALUES as a statement
VALUES (1, 'one'), (2, 'two'), (3, 'three');

-- # values-in-cte: VALUES inside a CTE
WITH t(n, name) AS (VALUES (1, 'a'), (2, 'b'))
SELECT * FROM t WHERE n > 1;

-- # values-from: VALUES in FROM
SELECT column1, column2 FROM (VALUES (1, 'x'), (2, 'y'));

-- # indexed-by: index hint
SELECT * FROM orders INDEXED BY idx_orders_date WHERE order_date > '2024-01-01';

-- # not-indexed: no index
SELECT * FROM orders NOT INDEXED WHERE id = 5;

-- # in-subquery-minus: IN then subtraction
SELECT x IN (SELECT 1) - (SELECT 2) FROM t;

-- # comment-line: line comments
-- find the active users
SELECT id, name -- the display name
FROM users
WHERE active = 1; -- only active ones

-- # comment-block: block comments
/* monthly report */
SELECT /* the month */ strftime('%m', day) AS m, SUM(sales)
FROM daily /* one row a day */
GROUP BY m;

-- # comment-tight: comments touching tokens
SELECT a/*first*/,b--second
FROM t;

-- # trailing-semicolon-blank: semicolon then blanks
SELECT 1;   

-- # leading-blank: blank lines first

   SELECT name FROM pets;

-- # keyword-names: keywords sqlite takes as names
SELECT key, value, desc, first, last, action, replace FROM settings;

-- # keyword-alias: keyword as alias
SELECT count(*) AS rows, max(x) AS range FROM t;

-- # true-false: true and false
SELECT * FROM features WHERE enabled = TRUE AND deprecated = FALSE;

-- # rowid: rowid
SELECT rowid, * FROM notes ORDER BY rowid DESC LIMIT 1;

-- # unicode-strings: unicode in strings
SELECT * FROM cities WHERE name = 'Zürich' OR name = '東京' OR name = 'São Paulo';

-- # unicode-identifier: unicode names
SELECT prénom, âge FROM élèves;

-- # union-all-order: union all with order by
SELECT name, 'customer' AS kind FROM customers
UNION ALL
SELECT name, 'supplier' FROM suppliers
ORDER BY name;

-- # nested-subqueries: nested
SELECT name FROM employees WHERE dept_id IN (SELECT id FROM departments WHERE location_id IN (SELECT id FROM locations WHERE country = 'DE'));

-- # having-no-group: HAVING without GROUP BY
SELECT COUNT(*) FROM orders HAVING COUNT(*) > 0;

-- # group-by-expression: group by expression
SELECT CASE WHEN age < 18 THEN 'minor' ELSE 'adult' END AS bracket, COUNT(*) FROM people GROUP BY bracket;

-- # group-by-number: group by position
SELECT department, COUNT(*) FROM employees GROUP BY 1 HAVING COUNT(*) >= 2 ORDER BY 2 DESC;

-- # percentage-of-total: share of total
SELECT category, SUM(amount) * 100.0 / (SELECT SUM(amount) FROM sales) AS pct FROM sales GROUP BY category;

-- # median-ish: middle row with offset
SELECT salary FROM employees ORDER BY salary LIMIT 1 OFFSET (SELECT COUNT(*) FROM employees) / 2;

-- # dedupe-rowid: keep the first of duplicates
SELECT * FROM contacts WHERE rowid IN (SELECT MIN(rowid) FROM contacts GROUP BY email);

-- # second-highest: second highest salary
SELECT MAX(salary) AS second_highest FROM employees WHERE salary < (SELECT MAX(salary) FROM employees);

-- # row-values: row value comparison
SELECT * FROM events WHERE (year, month) = (2024, 3);

-- # row-values-in: row values in a subquery
SELECT * FROM t1 WHERE (a, b) IN (SELECT x, y FROM t2);

-- # exists-select-star: exists with star
SELECT 'yes' WHERE EXISTS (SELECT * FROM users WHERE admin = 1);

-- # select-no-from: expression only
SELECT 1 + 1 AS two, 'hello' AS greeting, 3.14 * 2;

-- # select-date-now: now
SELECT date('now');

-- # random-sample: random order
SELECT * FROM quotes ORDER BY RANDOM() LIMIT 1;

-- # typeof: typeof
SELECT typeof(value), COUNT(*) FROM kv GROUP BY typeof(value);

-- # unary-minus: negative numbers
SELECT -price, - -1, +2, -(a + b) FROM items;

-- # negative-literal-compare: negative comparison
SELECT * FROM temps WHERE celsius < -10.5;

-- # dot-number: leading dot
SELECT .5 * price FROM items;

-- # in-empty-list: IN ()
SELECT * FROM t WHERE id IN ();

-- # in-table-name: IN table
SELECT * FROM orders WHERE customer_id IN vip_customers;

-- # multiple-ctes-join: CTEs joined
WITH a AS (SELECT id, x FROM t1), b AS (SELECT id, y FROM t2)
SELECT a.id, a.x, b.y FROM a JOIN b ON a.id = b.id;

-- # cte-column-list: CTE with columns
WITH stats(dept, n, avg_sal) AS (
    SELECT department, COUNT(*), AVG(salary) FROM employees GROUP BY department
)
SELECT * FROM stats WHERE n > 5;

-- # cte-in-subquery: WITH inside a subquery
SELECT * FROM (WITH x AS (SELECT 1 AS v) SELECT v FROM x);

-- # compound-three: three-way compound
SELECT a FROM t1 UNION SELECT b FROM t2 EXCEPT SELECT c FROM t3;

-- # cumulative-distinct-users: running count
SELECT day, COUNT(DISTINCT user_id) AS dau, SUM(COUNT(DISTINCT user_id)) OVER (ORDER BY day) AS cumulative FROM logins GROUP BY day;

-- # gaps-and-islands: islands with row_number
SELECT user_id, MIN(day) AS streak_start, MAX(day) AS streak_end, COUNT(*) AS days
FROM (
    SELECT user_id, day, julianday(day) - ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY day) AS grp
    FROM logins
)
GROUP BY user_id, grp
HAVING COUNT(*) >= 3;

-- # retention: cohort retention
WITH first_seen AS (
    SELECT user_id, MIN(date(ts)) AS cohort FROM events GROUP BY user_id
)
SELECT f.cohort,
       COUNT(DISTINCT f.user_id) AS users,
       COUNT(DISTINCT CASE WHEN date(e.ts) = date(f.cohort, '+7 days') THEN e.user_id END) AS retained_d7
FROM first_seen f
LEFT JOIN events e ON e.user_id = f.user_id
GROUP BY f.cohort
ORDER BY f.cohort;

-- # pivot-case: pivot with case
SELECT product,
       SUM(CASE WHEN quarter = 1 THEN sales END) AS q1,
       SUM(CASE WHEN quarter = 2 THEN sales END) AS q2,
       SUM(CASE WHEN quarter = 3 THEN sales END) AS q3,
       SUM(CASE WHEN quarter = 4 THEN sales END) AS q4
FROM quarterly
GROUP BY product;

-- # bird-superhero: BIRD-style question
SELECT T1.superhero_name FROM superhero AS T1 INNER JOIN colour AS T2 ON T1.eye_colour_id = T2.id WHERE T2.colour = 'Blue' AND T1.height_cm > 180;

-- # bird-ratio: BIRD-style ratio with cast
SELECT CAST(COUNT(CASE WHEN T1.gender = 'F' THEN 1 END) AS REAL) * 100 / COUNT(T1.id) FROM patient AS T1 WHERE strftime('%Y', T1.birthday) > '1960';

-- # bird-iif-sum: BIRD-style iif sum
SELECT SUM(IIF(T2.type = 'Owner', 1, 0)) FROM account AS T1 INNER JOIN disp AS T2 ON T1.account_id = T2.account_id WHERE T1.district_id = 1;

-- # bird-substr-date: substr on dates
SELECT COUNT(*) FROM transactions WHERE SUBSTR(date, 1, 4) = '2012' AND amount > 100;

-- # bird-order-limit-1: argmax
SELECT name FROM races ORDER BY date DESC LIMIT 1;

-- # bird-between-strings: between strings
SELECT COUNT(id) FROM posts WHERE CreationDate BETWEEN '2010-01-01' AND '2010-12-31 23:59:59';

-- # bird-distinct-join: distinct after join
SELECT DISTINCT T2.Name FROM Match AS T1 INNER JOIN League AS T2 ON T1.league_id = T2.id WHERE T1.season = '2015/2016';

-- # flights-delay: average delay by carrier
SELECT carrier, AVG(arr_delay) AS avg_delay FROM flights WHERE arr_delay IS NOT NULL GROUP BY carrier ORDER BY avg_delay;

-- # movies-top-rated: top rated movies with min votes
SELECT m.title, AVG(r.rating) AS avg_rating, COUNT(*) AS votes
FROM movies m JOIN ratings r ON r.movie_id = m.id
GROUP BY m.id
HAVING votes >= 100
ORDER BY avg_rating DESC, votes DESC
LIMIT 10;

-- # library-overdue: overdue loans
SELECT b.title, m.name, julianday('now') - julianday(l.due_date) AS days_overdue
FROM loans l
JOIN books b ON b.id = l.book_id
JOIN members m ON m.id = l.member_id
WHERE l.returned_at IS NULL AND l.due_date < date('now')
ORDER BY days_overdue DESC;

-- # inventory-reorder: below reorder level
SELECT sku, on_hand, reorder_level FROM inventory WHERE on_hand <= reorder_level ORDER BY on_hand - reorder_level;

-- # hr-tenure: years of service
SELECT name, CAST((julianday('now') - julianday(hire_date)) / 365.25 AS INTEGER) AS years FROM employees ORDER BY years DESC;

-- # sales-yoy: year over year with self join
SELECT cur.year, cur.total, prev.total AS prev_total, ROUND((cur.total - prev.total) * 100.0 / prev.total, 1) AS yoy
FROM yearly cur LEFT JOIN yearly prev ON prev.year = cur.year - 1;

-- # blog-comments: posts with comment counts
SELECT p.id, p.title, COUNT(c.id) AS comments FROM posts p LEFT JOIN comments c ON c.post_id = p.id GROUP BY p.id, p.title ORDER BY comments DESC;

-- # tags-many-to-many: posts with a tag
SELECT p.title FROM posts p JOIN post_tags pt ON pt.post_id = p.id JOIN tags t ON t.id = pt.tag_id WHERE t.name = 'sqlite';

-- # latest-per-group-window: latest per group with window
SELECT * FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY device_id ORDER BY reading_time DESC) AS rn
  FROM readings
) WHERE rn = 1;

-- # anti-join-left: anti join
SELECT a.id FROM accounts a LEFT JOIN closures c ON c.account_id = a.id WHERE c.account_id IS NULL;

-- # conditional-count: count with case in having
SELECT user_id FROM orders GROUP BY user_id HAVING SUM(CASE WHEN status = 'returned' THEN 1 ELSE 0 END) > 2;

-- # lower-like: case-insensitive search
SELECT * FROM products WHERE LOWER(name) LIKE '%' || LOWER(:q) || '%';

-- # regexp: regexp operator
SELECT * FROM logs WHERE message REGEXP '^ERROR';

-- # match: match operator
SELECT * FROM docs WHERE docs MATCH 'sqlite AND grammar';

-- # max-by-group-join: join to aggregated subquery
SELECT e.* FROM employees e
JOIN (SELECT department, MAX(salary) AS max_sal FROM employees GROUP BY department) m
  ON e.department = m.department AND e.salary = m.max_sal;

-- # exists-correlated-and: correlated exists with and
SELECT s.name FROM students s WHERE EXISTS (SELECT 1 FROM grades g WHERE g.student_id = s.id AND g.score < 50) AND s.year = 2;

-- # case-in-order-by: custom order
SELECT * FROM tickets ORDER BY CASE priority WHEN 'high' THEN 1 WHEN 'medium' THEN 2 ELSE 3 END, created_at;

-- # case-in-where: case in where
SELECT * FROM items WHERE CASE WHEN discount IS NULL THEN price ELSE price - discount END < 20;

-- # nested-case: nested case
SELECT CASE WHEN a > 0 THEN CASE WHEN b > 0 THEN 'both' ELSE 'a only' END ELSE 'none' END FROM pairs;

-- # distinct-in-aggregate-list: count distinct with expression
SELECT COUNT(DISTINCT strftime('%Y-%m', created_at)) AS active_months FROM orders WHERE user_id = 42;

-- # sum-distinct: sum of distinct
SELECT SUM(DISTINCT amount) FROM payments;

-- # avg-filter-group: average with filter
SELECT department, AVG(salary) FILTER (WHERE title LIKE '%Engineer%') AS eng_avg FROM employees GROUP BY department;

-- # window-partition-multi: partition by two columns
SELECT *, SUM(qty) OVER (PARTITION BY store_id, product_id ORDER BY sold_on) AS running_qty FROM sales;

-- # window-groups-frame: groups frame
SELECT x, COUNT(*) OVER (ORDER BY x GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM nums;

-- # window-unbounded-following: to the end
SELECT id, SUM(v) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS remaining FROM ledger;

-- # window-base-name: window based on a named window
SELECT id, SUM(v) OVER (w ROWS 2 PRECEDING) FROM ledger WINDOW w AS (ORDER BY id);

-- # lag-default: lag with default
SELECT day, value - LAG(value, 1, 0) OVER (ORDER BY day) AS delta FROM series;

-- # cume-dist: cume_dist
SELECT score, CUME_DIST() OVER (ORDER BY score) AS pct FROM results;

-- # last-value-frame: last value
SELECT DISTINCT grp, LAST_VALUE(v) OVER (PARTITION BY grp ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) FROM data;

-- # semicolon-comment-after: comment after semicolon
SELECT 42; -- the answer

-- # block-comment-after: block comment after semicolon
SELECT 42; /* done */

-- # open-comment-end: comment left open at the end
SELECT 42 /* trailing note

-- # line-comment-end: line comment at the end without newline
SELECT 42 -- answer

-- # tabs-and-crlf: tabs and CRLF
SELECT	id,	name
FROM	users
WHERE	id	=	1;

-- # tight-parens: no blanks around parentheses
SELECT*FROM t WHERE(a=1)OR NOT(b<>2)AND c IN(1,2);

-- # lowercase-everything: lower case
select u.id, u.name from users u where u.created_at > '2020-01-01' order by u.id limit 5;

-- # mixed-case-keywords: mixed case
Select Name From Customers Where Country = 'Mexico' Order By Name;

-- # many-columns-newlines: one column a line
SELECT
    o.id,
    o.created_at,
    c.name AS customer,
    p.name AS product,
    oi.quantity,
    oi.unit_price,
    oi.quantity * oi.unit_price AS line_total
FROM orders o
JOIN customers c ON c.id = o.customer_id
JOIN order_items oi ON oi.order_id = o.id
JOIN products p ON p.id = oi.product_id
WHERE o.created_at >= '2024-01-01'
ORDER BY o.created_at DESC, line_total DESC;

-- # double-quoted-string-literal: double quotes as a string (sqlite allows)
SELECT * FROM users WHERE status = "active";

-- # qualified-star: table star
SELECT o.*, c.name FROM orders o JOIN customers c ON c.id = o.customer_id;

-- # schema-qualified: main schema
SELECT * FROM main.users;

-- # temp-schema: temp schema
SELECT name FROM temp.sqlite_master WHERE type = 'table';

-- # sqlite-master: list tables
SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name;

-- # pragma-function: pragma table-valued function
SELECT name, type FROM pragma_table_info('users');

-- # generate-series-cte: numbers
WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq LIMIT 100) SELECT n FROM seq;

-- # date-series: calendar with recursive CTE
WITH RECURSIVE dates(d) AS (
    SELECT date('2024-01-01')
    UNION ALL
    SELECT date(d, '+1 day') FROM dates WHERE d < '2024-01-31'
)
SELECT d, COALESCE(SUM(o.total), 0) AS revenue
FROM dates
LEFT JOIN orders o ON date(o.created_at) = d
GROUP BY d;

-- # fibonacci: recursive fibonacci
WITH RECURSIVE fib(a, b, n) AS (SELECT 0, 1, 1 UNION ALL SELECT b, a + b, n + 1 FROM fib WHERE n < 20) SELECT a FROM fib;

-- # exists-or: exists or condition
SELECT * FROM users u WHERE u.is_admin = 1 OR EXISTS (SELECT 1 FROM roles r WHERE r.user_id = u.id AND r.name = 'editor');

-- # all-caps-functions: all caps functions
SELECT LENGTH(TRIM(UPPER(name))) FROM t;

-- # is-true: IS TRUE
SELECT * FROM flags WHERE enabled IS TRUE;

-- # not-in-null-safe: not in with not null filter
SELECT id FROM a WHERE id NOT IN (SELECT a_id FROM b WHERE a_id IS NOT NULL);

-- # min-date-having: having with date
SELECT customer_id, MIN(order_date) AS first_order FROM orders GROUP BY customer_id HAVING MIN(order_date) >= '2024-01-01';

-- # window-in-cte-filter: rank in CTE then filter
WITH ranked AS (
    SELECT p.*, RANK() OVER (PARTITION BY category_id ORDER BY price DESC) AS price_rank FROM products p
)
SELECT name, category_id, price FROM ranked WHERE price_rank = 1;

-- # unions-with-literals: union of literal rows
SELECT 'low' AS band, 0 AS lo, 10 AS hi UNION ALL SELECT 'mid', 10, 100 UNION ALL SELECT 'high', 100, NULL;

-- # coalesce-left-join-counts: zero for missing
SELECT d.name, COALESCE(COUNT(e.id), 0) AS headcount FROM departments d LEFT JOIN employees e ON e.dept_id = d.id GROUP BY d.id;

-- # string-with-quote: escaped quote
SELECT * FROM authors WHERE name = 'O''Brien';

-- # string-with-semicolon: semicolon inside a string
SELECT 'a;b' AS s;

-- # string-with-dashes: dashes inside a string
SELECT * FROM notes WHERE body LIKE '%--%';

-- # long-in-list: many values
SELECT * FROM zips WHERE code IN ('10001', '10002', '10003', '10004', '10005', '10006', '10007', '10008', '10009', '10010');

-- # arithmetic-precedence: arithmetic
SELECT (price * qty) - discount + tax / 100.0 AS net FROM lines;

-- # division-real: real division
SELECT 1.0 * wins / (wins + losses) AS win_rate FROM teams;

-- # percent-literal: percent as a multiplier
SELECT (new - old) * 100.0 / old AS growth_rate FROM kpis;

-- # having-alias: having uses alias
SELECT city, COUNT(*) AS c FROM stores GROUP BY city HAVING c > 3;

-- # natural-left-join: natural left join
SELECT * FROM a NATURAL LEFT JOIN b;

-- # join-parenthesised: parenthesised join
SELECT * FROM (a JOIN b ON a.id = b.a_id) JOIN c ON c.b_id = b.id;

-- # join-subquery-using: join a subquery with using
SELECT * FROM orders JOIN (SELECT id AS customer_id, name FROM customers) USING (customer_id);

-- # select-distinct-star: distinct star
SELECT DISTINCT * FROM tags;

-- # select-all: select all
SELECT ALL name FROM tags;

-- # limit-expression: limit with expression
SELECT * FROM items LIMIT (SELECT COUNT(*) FROM items) / 10;

-- # limit-param: limit with parameter
SELECT * FROM items ORDER BY id LIMIT ? OFFSET ?;

-- # raise-ignore: raise (trigger-only, but it parses)
SELECT RAISE(IGNORE);

-- # exists-values: exists values
SELECT EXISTS (VALUES (1));

-- # scalar-values: scalar values subquery
SELECT (VALUES (42)) AS answer;


-- # slip-trailing-comma: comma before FROM, the most common slip
SELECT name, email, FROM users;

-- # slip-trailing-comma-newline: comma before FROM on its own line
SELECT
    id,
    name,
FROM customers
WHERE active = 1;

-- # slip-trailing-comma-group-by: comma before ORDER BY
SELECT dept, COUNT(*) FROM emp GROUP BY dept, ORDER BY dept;

-- # slip-select-from: no columns
SELECT FROM orders;

-- # slip-where-at-end: WHERE with nothing after it
SELECT * FROM orders WHERE

-- # slip-where-at-end-semicolon: WHERE then semicolon
SELECT * FROM orders WHERE;

-- # slip-and-at-end: dangling AND
SELECT * FROM orders WHERE status = 'open' AND

-- # slip-cast-no-type: CAST without AS
SELECT CAST(price) FROM products;

-- # slip-cast-comma: CAST with a comma
SELECT CAST(price, REAL) FROM products;

-- # slip-left-function: LEFT() as a function
SELECT LEFT(name, 2) FROM users;

-- # slip-right-function: RIGHT() as a function
SELECT RIGHT(phone, 4) FROM users;

-- # slip-from-table: table named table
SELECT * FROM table;

-- # slip-from-order: table named order
SELECT * FROM order WHERE id = 1;

-- # slip-from-group: table named group
SELECT name FROM group;

-- # slip-percent-as: percent sign after a number
SELECT (revenue - cost) / revenue * 100% as growth_rate FROM finance;

-- # slip-percent-alias: percent then alias
SELECT ratio * 100% AS pct FROM stats;

-- # slip-number-alias-glued: exponent mistaken for alias
SELECT 1e5;

-- # slip-number-glued-word: number glued to a word
SELECT 1abc FROM t;

-- # slip-number-glued-keyword: number glued to a keyword
SELECT * FROM t WHERE a = 1AND b = 2;

-- # slip-top: T-SQL TOP
SELECT TOP 5 name FROM users;

-- # slip-ilike: ILIKE
SELECT * FROM users WHERE name ILIKE '%bob%';

-- # slip-pg-cast: Postgres :: cast
SELECT created_at::date FROM events;

-- # slip-interval: INTERVAL literal
SELECT * FROM events WHERE ts > NOW() - INTERVAL '1 day';

-- # slip-extract: EXTRACT
SELECT EXTRACT(YEAR FROM order_date) FROM orders;

-- # slip-date-trunc: DATE_TRUNC (parses: just no such function)
SELECT DATE_TRUNC('month', created_at) AS month, COUNT(*) FROM orders GROUP BY 1;

-- # slip-fetch-first: FETCH FIRST
SELECT * FROM orders ORDER BY id FETCH FIRST 10 ROWS ONLY;

-- # slip-offset-rows: OFFSET n ROWS
SELECT * FROM orders ORDER BY id OFFSET 10 ROWS;

-- # slip-distinct-on: DISTINCT ON
SELECT DISTINCT ON (customer_id) * FROM orders ORDER BY customer_id, created_at DESC;

-- # slip-limit-trailing-comma: LIMIT with a trailing comma
SELECT * FROM t LIMIT 5,;

-- # slip-double-comma: two commas
SELECT a,, b FROM t;

-- # slip-unclosed-paren: missing closing parenthesis
SELECT COUNT(* FROM orders;

-- # slip-extra-paren: extra closing parenthesis
SELECT COUNT(*)) FROM orders;

-- # slip-unclosed-string: unterminated string
SELECT * FROM users WHERE name = 'bob;

-- # slip-isnull-function: ISNULL() as a function
SELECT ISNULL(phone, 'n/a') FROM contacts;

-- # slip-any: = ANY
SELECT * FROM t WHERE id = ANY (SELECT id FROM u);

-- # slip-all: > ALL
SELECT * FROM t WHERE price > ALL (SELECT price FROM u);

-- # slip-qualify: QUALIFY
SELECT *, ROW_NUMBER() OVER (PARTITION BY a ORDER BY b) AS rn FROM t QUALIFY rn = 1;

-- # slip-having-before-group: HAVING before GROUP BY
SELECT dept, COUNT(*) FROM emp HAVING COUNT(*) > 1 GROUP BY dept;

-- # slip-order-before-where: ORDER BY before WHERE
SELECT * FROM emp ORDER BY name WHERE dept = 'IT';

-- # slip-limit-before-order: LIMIT before ORDER BY
SELECT * FROM emp LIMIT 10 ORDER BY name;

-- # slip-order-before-union: ORDER BY before UNION
SELECT a FROM t1 ORDER BY a UNION SELECT b FROM t2;

-- # slip-limit-before-union: LIMIT before UNION
SELECT a FROM t1 LIMIT 1 UNION SELECT b FROM t2;

-- # slip-join-no-table: JOIN without a table
SELECT * FROM a JOIN ON a.id = b.id;

-- # slip-on-without-join: ON without JOIN
SELECT * FROM a ON a.id = 1;

-- # slip-using-without-join: USING without JOIN
SELECT * FROM a USING (id);

-- # slip-outer-join-alone: OUTER JOIN without LEFT
SELECT * FROM a OUTER JOIN b ON a.id = b.id;

-- # slip-left-inner: LEFT INNER JOIN
SELECT * FROM a LEFT INNER JOIN b ON a.id = b.id;

-- # slip-inner-outer: INNER OUTER JOIN
SELECT * FROM a INNER OUTER JOIN b ON a.id = b.id;

-- # slip-full-join-word: FULL JOIN (fine in 3.39+)
SELECT * FROM a FULL JOIN b ON a.id = b.id;

-- # slip-double-where: WHERE twice
SELECT * FROM t WHERE a = 1 WHERE b = 2;

-- # slip-and-and: AND AND
SELECT * FROM t WHERE a = 1 AND AND b = 2;

-- # slip-missing-operator: two names side by side in WHERE
SELECT * FROM t WHERE a b;

-- # slip-equals-equals-equals: ===
SELECT * FROM t WHERE a === 1;

-- # slip-not-equal-bang: ! alone
SELECT * FROM t WHERE !active;

-- # slip-double-quote-alias-as: fine: double quoted alias
SELECT COUNT(*) AS "Total Orders" FROM orders;

-- # slip-keyword-column-from: column named from
SELECT from, to FROM routes;

-- # slip-keyword-alias-order: alias named order
SELECT position AS order FROM items;

-- # slip-keyword-alias-group: alias named group unquoted
SELECT team AS group FROM players;

-- # slip-keyword-table-alias-as: table alias named as
SELECT * FROM t as;

-- # slip-reserved-column-index: column named index
SELECT index FROM pages;

-- # slip-select-star-comma: star then trailing comma
SELECT *, FROM t;

-- # slip-case-no-end: CASE without END
SELECT CASE WHEN a > 1 THEN 'x' ELSE 'y' FROM t;

-- # slip-case-no-when: CASE ELSE only
SELECT CASE ELSE 1 END FROM t;

-- # slip-between-or: BETWEEN with OR
SELECT * FROM t WHERE a BETWEEN 1 OR 2;

-- # slip-between-no-and: BETWEEN missing AND
SELECT * FROM t WHERE a BETWEEN 1;

-- # slip-in-no-parens: IN with bare list
SELECT * FROM t WHERE a IN 1, 2, 3;

-- # slip-like-escape-twice: ESCAPE twice
SELECT * FROM t WHERE a LIKE 'x' ESCAPE '!' ESCAPE '#';

-- # slip-is-not-distinct-no-from: missing FROM
SELECT * FROM t WHERE a IS NOT DISTINCT b;

-- # slip-window-distinct: DISTINCT in a window function
SELECT COUNT(DISTINCT user_id) OVER (PARTITION BY day) FROM visits;

-- # slip-window-filter-after-over: FILTER after OVER
SELECT SUM(x) OVER (ORDER BY d) FILTER (WHERE x > 0) FROM t;

-- # slip-frame-backwards: frame end before its start
SELECT SUM(x) OVER (ORDER BY d ROWS BETWEEN CURRENT ROW AND 1 PRECEDING) FROM t;

-- # slip-frame-unbounded-following-start: frame starting at UNBOUNDED FOLLOWING
SELECT SUM(x) OVER (ORDER BY d ROWS BETWEEN UNBOUNDED FOLLOWING AND CURRENT ROW) FROM t;

-- # slip-frame-following-alone: lone n FOLLOWING
SELECT SUM(x) OVER (ORDER BY d ROWS 1 FOLLOWING) FROM t;

-- # slip-over-no-parens: OVER with PARTITION but no parentheses
SELECT SUM(x) OVER PARTITION BY g FROM t;

-- # slip-partition-without-by: PARTITION without BY
SELECT RANK() OVER (PARTITION g ORDER BY x) FROM t;

-- # slip-nulls-no-first: NULLS without FIRST or LAST
SELECT * FROM t ORDER BY a NULLS;

-- # slip-group-by-empty: GROUP BY with nothing
SELECT a FROM t GROUP BY;

-- # slip-order-no-by: ORDER without BY
SELECT * FROM t ORDER a;

-- # slip-with-no-select: CTE without a main query
WITH x AS (SELECT 1);

-- # slip-with-no-as: CTE without AS
WITH x (SELECT 1) SELECT * FROM x;

-- # slip-recursive-name: CTE named recursive
WITH recursive AS (SELECT 1) SELECT * FROM recursive;

-- # slip-cte-trailing-comma: comma after the last CTE
WITH a AS (SELECT 1), SELECT * FROM a;

-- # slip-union-distinct: UNION DISTINCT
SELECT a FROM t1 UNION DISTINCT SELECT a FROM t2;

-- # slip-values-order-by: VALUES with ORDER BY
VALUES (2), (1) ORDER BY 1;

-- # slip-values-no-parens: VALUES without parentheses
VALUES 1, 2, 3;

-- # slip-two-statements: two statements
SELECT 1; SELECT 2;

-- # slip-insert: not a query
INSERT INTO t VALUES (1);

-- # slip-markdown-fence: markdown fence left in
```sql
SELECT 1;
```

-- # slip-prose-after: prose after the query
SELECT name FROM users; This returns all user names.

-- # slip-prose-before: prose before the query
Here is the query: SELECT name FROM users;

-- # slip-unicode-quotes: curly quotes
SELECT * FROM users WHERE name = ‘bob’;

-- # slip-backslash-escape: backslash escaped quote
SELECT * FROM authors WHERE name = 'O\'Brien';

-- # slip-mysql-limit-all: LIMIT ALL
SELECT * FROM t LIMIT ALL;

-- # slip-hex-empty: 0x without digits
SELECT 0x FROM t;

-- # slip-hex-glued-letter: hex then a non-hex letter (parses: alias)
SELECT 0x1Fg FROM t;

-- # slip-exponent-incomplete: 1e without digits
SELECT 1e FROM t;

-- # slip-decimal-glued: 1.5x
SELECT 1.5x FROM t;

-- # slip-dot-dot: two dots
SELECT 1..5;

-- # slip-qualified-four: four-part name
SELECT a.b.c.d FROM t;

-- # slip-star-alias: alias on star
SELECT * AS everything FROM t;

-- # slip-two-aliases: two aliases
SELECT a x y FROM t;

-- # slip-double-as: AS AS
SELECT a AS AS b FROM t;

-- # slip-as-number: alias that is a number
SELECT a AS 1 FROM t;

-- # slip-blob-odd: blob with odd digits
SELECT x'ABC';

-- # slip-blob-bad-digit: blob with a non-hex digit
SELECT x'ZZ';

-- # slip-comment-eats-paren: line comment eats the rest
SELECT (1 --2)
;

-- # slip-minus-minus: double minus is a comment
SELECT 1--2;

-- # slip-open-comment-bare: bare /* at the end is a slash
SELECT 1 /*

-- # slip-param-hash-digit: #1 parameter
SELECT * FROM t WHERE id = #1;

-- # slip-dollar-glued: keyword glued to a $ parameter
SELECT$x FROM t;

-- # slip-keyword-glued-name: keyword glued to a name
SELECT a FROM tWHERE x = 1;

-- # slip-limit-glued-number: LIMIT glued to a number
SELECT a FROM t LIMIT10;

-- # slip-end-glued: END glued to a name
SELECT CASE WHEN 1 THEN 2 ENDx FROM t;

-- # slip-raise-expression: RAISE message must be a name or string
SELECT RAISE(ABORT, 'a' || 'b');

-- # slip-indexed-on-subquery: INDEXED BY on a subquery
SELECT * FROM (SELECT 1) AS s INDEXED BY i;

-- # slip-alias-after-indexed: alias after INDEXED BY
SELECT * FROM t INDEXED BY i x;

-- # slip-empty: nothing at all

-- # slip-only-comment: only a comment
-- nothing here
