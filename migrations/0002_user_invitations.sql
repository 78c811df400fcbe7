-- migrate:up
-- A user may have been invited by another user: a self-reference. Deleting the inviter keeps the user.
ALTER TABLE users ADD COLUMN invited_by_id uuid REFERENCES users (uuid) ON DELETE SET NULL;
CREATE INDEX users_invited_by_id_idx ON users (invited_by_id);

-- migrate:down
ALTER TABLE users DROP COLUMN invited_by_id;
