-- mem0's local history database (Python SDK, mem0/memory/storage.py SQLiteManager schema).
CREATE TABLE history (
    id           TEXT PRIMARY KEY,
    memory_id    TEXT,
    old_memory   TEXT,
    new_memory   TEXT,
    event        TEXT,
    created_at   DATETIME,
    updated_at   DATETIME,
    is_deleted   INTEGER,
    actor_id     TEXT,
    role         TEXT
);
CREATE TABLE messages (
    id TEXT PRIMARY KEY,
    session_scope TEXT,
    role TEXT,
    content TEXT,
    name TEXT,
    created_at DATETIME
);
-- m-1: added, then updated twice: the last text wins.
INSERT INTO history VALUES ('h-01', 'm-1', NULL, 'Likes short code reviews', 'ADD', '2024-06-01T10:00:00+00:00', NULL, 0, NULL, 'user');
-- m-2: added, then deleted: skipped. (mem0 writes DELETE rows without created_at.)
INSERT INTO history VALUES ('h-02', 'm-2', NULL, 'Works from the Berlin office', 'ADD', '2024-06-01T10:05:00+00:00', NULL, 0, NULL, 'user');
INSERT INTO history VALUES ('h-03', 'm-1', 'Likes short code reviews', 'Prefers code reviews under 300 lines', 'UPDATE', '2024-06-01T10:00:00+00:00', '2024-06-02T09:00:00+00:00', 0, NULL, 'user');
INSERT INTO history VALUES ('h-04', 'm-3', NULL, 'Runs the test suite with pytest -x', 'ADD', '2024-06-03T11:00:00+00:00', NULL, 0, NULL, 'user');
INSERT INTO history VALUES ('h-05', 'm-2', 'Works from the Berlin office', NULL, 'DELETE', NULL, NULL, 1, NULL, 'user');
INSERT INTO history VALUES ('h-06', 'm-1', 'Prefers code reviews under 300 lines', 'Prefers code reviews under 400 lines', 'UPDATE', '2024-06-01T10:00:00+00:00', '2024-06-04T09:00:00+00:00', 0, NULL, 'user');
-- m-4: an UPDATE with no text: nothing to import.
INSERT INTO history VALUES ('h-07', 'm-4', NULL, NULL, 'UPDATE', '2024-06-05T11:00:00+00:00', NULL, 0, NULL, 'user');
-- m-5: a credential that ended up in memory: demoted to scope local.
INSERT INTO history VALUES ('h-08', 'm-5', NULL, 'Deploy token is ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5', 'ADD', '2024-06-06T11:00:00+00:00', NULL, 0, NULL, 'user');
INSERT INTO messages VALUES ('msg-1', 'user_id=alice', 'user', 'I prefer small PRs', NULL, '2024-06-01T10:00:00+00:00');
