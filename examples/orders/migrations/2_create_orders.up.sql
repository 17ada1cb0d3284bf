-- What each account ordered.
CREATE TABLE orders (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    item TEXT NOT NULL,
    quantity BIGINT NOT NULL CHECK (quantity > 0)
);
CREATE INDEX orders_by_account ON orders (account_id);
