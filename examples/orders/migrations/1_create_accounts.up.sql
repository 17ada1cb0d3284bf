-- The people who place orders.
CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL
);
