-- migrate:up
-- A version for every book: the web service writes a book only at the version the client read (its ETag), and the
-- library makes every write of a model that declares it (`versionKey`) conditional on it. Rows already there start
-- at 1, as every insert that leaves the column out does.
ALTER TABLE books ADD COLUMN version integer NOT NULL DEFAULT 1;

-- migrate:down
ALTER TABLE books DROP COLUMN version;
