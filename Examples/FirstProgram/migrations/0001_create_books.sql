-- migrate:up
CREATE TABLE books (uuid uuid PRIMARY KEY, title text NOT NULL, price double precision NOT NULL);

-- migrate:down
DROP TABLE books;
