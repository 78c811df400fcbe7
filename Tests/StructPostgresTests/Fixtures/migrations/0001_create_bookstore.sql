-- migrate:up
-- The book store of the StructCoreData demo: stores own sets of books, books have an author,
-- reviews point back at their book and at the user who wrote them.

CREATE TABLE authors (
    uuid uuid PRIMARY KEY,
    name text NOT NULL
);

CREATE TABLE users (
    uuid uuid PRIMARY KEY,
    name text NOT NULL,
    avatar_url text,
    role text NOT NULL DEFAULT 'reader' CHECK (role IN ('reader', 'critic', 'admin'))
);

CREATE TABLE books (
    uuid uuid PRIMARY KEY,
    title text,
    price double precision NOT NULL DEFAULT 0,
    publisher text,
    author_id uuid REFERENCES authors (uuid) ON DELETE SET NULL
);
CREATE INDEX books_author_id_idx ON books (author_id);

CREATE TABLE stores (
    uuid uuid PRIMARY KEY,
    brand text NOT NULL
);

CREATE TABLE store_books (
    store_id uuid NOT NULL REFERENCES stores (uuid) ON DELETE CASCADE,
    book_id uuid NOT NULL REFERENCES books (uuid) ON DELETE CASCADE,
    PRIMARY KEY (store_id, book_id)
);
CREATE INDEX store_books_book_id_idx ON store_books (book_id);

CREATE TABLE reviews (
    uuid uuid PRIMARY KEY,
    book_id uuid NOT NULL REFERENCES books (uuid) ON DELETE CASCADE,
    content text,
    created_at timestamptz NOT NULL DEFAULT now(),
    user_id uuid REFERENCES users (uuid) ON DELETE SET NULL
);
CREATE INDEX reviews_book_id_created_at_idx ON reviews (book_id, created_at);
CREATE INDEX reviews_user_id_idx ON reviews (user_id);

-- migrate:down
DROP TABLE reviews;
DROP TABLE store_books;
DROP TABLE stores;
DROP TABLE books;
DROP TABLE users;
DROP TABLE authors;
