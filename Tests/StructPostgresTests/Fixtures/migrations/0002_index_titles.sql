-- migrate:up transaction:false
CREATE INDEX CONCURRENTLY books_title_idx ON books (title);

-- migrate:down transaction:false
DROP INDEX CONCURRENTLY books_title_idx;
