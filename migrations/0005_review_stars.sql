-- migrate:up
-- A review's rating, one to five stars; reviews written before it have none. A book's rating is their average.
ALTER TABLE reviews ADD COLUMN stars smallint CHECK (stars BETWEEN 1 AND 5);

-- migrate:down
ALTER TABLE reviews DROP COLUMN stars;
