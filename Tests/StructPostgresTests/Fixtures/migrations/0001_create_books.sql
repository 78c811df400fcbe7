-- migrate:up
CREATE TABLE books (uuid uuid PRIMARY KEY, title text);

-- migrate:down
DROP TABLE books;
