// The workspace database schema (version kSchemaVersion). Rows are append-only: triggers reject
// updates and deletes, except a task's status moving forward once. Every row of the metadata
// tables carries `checksum`, the hash of its other columns (workspace.cpp, rowChecksum), set
// once right after the row is written (a task's again when its status moves) and verified on
// every read.
#pragma once

namespace argus::workspace {

inline constexpr const char* kSchemaSql = R"sql(
CREATE TABLE IF NOT EXISTS meta(
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS versions(
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL CHECK(kind IN ('program', 'variant')),
  base_id INTEGER REFERENCES versions(id),
  transform TEXT NOT NULL,
  options_json TEXT NOT NULL,
  label TEXT NOT NULL,
  task_id INTEGER REFERENCES tasks(id),
  created_at INTEGER NOT NULL,
  content_key TEXT NOT NULL DEFAULT '',
  checksum TEXT NOT NULL DEFAULT ''
);
-- A version's identity by content, where its maker gives one: two processes adding the same
-- program at once get one version.
CREATE UNIQUE INDEX IF NOT EXISTS versions_by_content ON versions(content_key)
  WHERE content_key <> '';

CREATE TABLE IF NOT EXISTS tasks(
  id INTEGER PRIMARY KEY,
  type TEXT NOT NULL CHECK(type IN ('transform', 'collect', 'synthesize', 'control')),
  memo_key TEXT NOT NULL,
  descriptor_json TEXT NOT NULL,
  status TEXT NOT NULL
    CHECK(status IN ('queued', 'running', 'succeeded', 'failed', 'timed_out', 'cancelled')),
  attempt INTEGER NOT NULL,
  version_id INTEGER REFERENCES versions(id),
  queued_at INTEGER NOT NULL,
  started_at INTEGER,
  ended_at INTEGER,
  error TEXT NOT NULL DEFAULT '',
  log_artifact_id INTEGER REFERENCES artifacts(id),
  owner TEXT NOT NULL DEFAULT '',
  checksum TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS tasks_by_memo ON tasks(memo_key, status, id);
-- What recovery reads on every writable open: the unfinished tasks and their owners.
CREATE INDEX IF NOT EXISTS tasks_unfinished ON tasks(owner) WHERE status IN ('queued', 'running');

CREATE TABLE IF NOT EXISTS artifacts(
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  scope TEXT NOT NULL,
  version_id INTEGER REFERENCES versions(id),
  task_id INTEGER REFERENCES tasks(id),
  hash TEXT NOT NULL,
  size INTEGER NOT NULL,
  stored_size INTEGER NOT NULL,
  compression TEXT NOT NULL CHECK(compression IN ('none', 'zstd')),
  created_at INTEGER NOT NULL,
  location TEXT NOT NULL CHECK(location IN ('file', 'inline')),
  checksum TEXT NOT NULL DEFAULT ''
);

-- Small contents (up to kInlineBlobLimit), content-addressed like blob files; gc deletes rows
-- that no artifact names.
CREATE TABLE IF NOT EXISTS inline_blobs(
  hash TEXT PRIMARY KEY,
  compression TEXT NOT NULL CHECK(compression IN ('none', 'zstd')),
  data BLOB NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS artifacts_by_evidence ON artifacts(version_id, kind, scope, id);
CREATE INDEX IF NOT EXISTS artifacts_by_task ON artifacts(task_id, id);
CREATE INDEX IF NOT EXISTS artifacts_by_hash ON artifacts(hash);

CREATE TABLE IF NOT EXISTS version_files(
  version_id INTEGER NOT NULL REFERENCES versions(id),
  name TEXT NOT NULL,
  artifact_id INTEGER NOT NULL REFERENCES artifacts(id),
  checksum TEXT NOT NULL DEFAULT '',
  PRIMARY KEY(version_id, name)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS task_inputs(
  task_id INTEGER NOT NULL REFERENCES tasks(id),
  position INTEGER NOT NULL,
  artifact_id INTEGER NOT NULL REFERENCES artifacts(id),
  checksum TEXT NOT NULL DEFAULT '',
  PRIMARY KEY(task_id, position)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS runs(
  id INTEGER PRIMARY KEY,
  task_id INTEGER NOT NULL REFERENCES tasks(id),
  device TEXT NOT NULL,
  backend_config_json TEXT NOT NULL,
  environment_json TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  checksum TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS runs_by_task ON runs(task_id);

CREATE TRIGGER IF NOT EXISTS versions_immutable BEFORE UPDATE OF
  id, kind, base_id, transform, options_json, label, task_id, created_at, content_key ON versions
  BEGIN SELECT RAISE(ABORT, 'versions are immutable'); END;
CREATE TRIGGER IF NOT EXISTS versions_kept BEFORE DELETE ON versions
  BEGIN SELECT RAISE(ABORT, 'versions are never deleted'); END;
CREATE TRIGGER IF NOT EXISTS artifacts_immutable BEFORE UPDATE OF
  id, kind, name, scope, version_id, task_id, hash, size, stored_size, compression, created_at,
  location ON artifacts
  BEGIN SELECT RAISE(ABORT, 'artifacts are immutable'); END;
CREATE TRIGGER IF NOT EXISTS artifacts_kept BEFORE DELETE ON artifacts
  BEGIN SELECT RAISE(ABORT, 'artifacts are never deleted'); END;
CREATE TRIGGER IF NOT EXISTS version_files_immutable BEFORE UPDATE OF
  version_id, name, artifact_id ON version_files
  BEGIN SELECT RAISE(ABORT, 'version files are immutable'); END;
CREATE TRIGGER IF NOT EXISTS version_files_kept BEFORE DELETE ON version_files
  BEGIN SELECT RAISE(ABORT, 'version files are never deleted'); END;
CREATE TRIGGER IF NOT EXISTS task_inputs_immutable BEFORE UPDATE OF
  task_id, position, artifact_id ON task_inputs
  BEGIN SELECT RAISE(ABORT, 'task inputs are immutable'); END;
CREATE TRIGGER IF NOT EXISTS task_inputs_kept BEFORE DELETE ON task_inputs
  BEGIN SELECT RAISE(ABORT, 'task inputs are never deleted'); END;
CREATE TRIGGER IF NOT EXISTS runs_immutable BEFORE UPDATE OF
  id, task_id, device, backend_config_json, environment_json, created_at ON runs
  BEGIN SELECT RAISE(ABORT, 'runs are immutable'); END;
CREATE TRIGGER IF NOT EXISTS runs_kept BEFORE DELETE ON runs
  BEGIN SELECT RAISE(ABORT, 'runs are never deleted'); END;
CREATE TRIGGER IF NOT EXISTS tasks_kept BEFORE DELETE ON tasks
  BEGIN SELECT RAISE(ABORT, 'tasks are never deleted'); END;
CREATE TRIGGER IF NOT EXISTS tasks_forward_only BEFORE UPDATE OF
  id, type, memo_key, descriptor_json, status, attempt, version_id, queued_at, started_at,
  ended_at, error, log_artifact_id, owner ON tasks
  WHEN OLD.status NOT IN ('queued', 'running')
    OR (OLD.status = 'running' AND NEW.status IN ('queued', 'running'))
    OR (OLD.status = 'queued' AND NEW.status = 'queued')
    OR NEW.id IS NOT OLD.id OR NEW.type IS NOT OLD.type OR NEW.memo_key IS NOT OLD.memo_key
    OR NEW.descriptor_json IS NOT OLD.descriptor_json OR NEW.attempt IS NOT OLD.attempt
    OR NEW.version_id IS NOT OLD.version_id OR NEW.queued_at IS NOT OLD.queued_at
    OR NEW.owner IS NOT OLD.owner
  BEGIN SELECT RAISE(ABORT, 'a task''s status only moves forward'); END;
-- A checksum is set once, right after its row is written (a task's moves with its status).
CREATE TRIGGER IF NOT EXISTS versions_sealed BEFORE UPDATE OF checksum ON versions
  WHEN OLD.checksum <> '' BEGIN SELECT RAISE(ABORT, 'versions are sealed'); END;
CREATE TRIGGER IF NOT EXISTS artifacts_sealed BEFORE UPDATE OF checksum ON artifacts
  WHEN OLD.checksum <> '' BEGIN SELECT RAISE(ABORT, 'artifacts are sealed'); END;
CREATE TRIGGER IF NOT EXISTS version_files_sealed BEFORE UPDATE OF checksum ON version_files
  WHEN OLD.checksum <> '' BEGIN SELECT RAISE(ABORT, 'version files are sealed'); END;
CREATE TRIGGER IF NOT EXISTS task_inputs_sealed BEFORE UPDATE OF checksum ON task_inputs
  WHEN OLD.checksum <> '' BEGIN SELECT RAISE(ABORT, 'task inputs are sealed'); END;
CREATE TRIGGER IF NOT EXISTS runs_sealed BEFORE UPDATE OF checksum ON runs
  WHEN OLD.checksum <> '' BEGIN SELECT RAISE(ABORT, 'runs are sealed'); END;
)sql";

/// Schema 1 -> 2, before kSchemaSql (which then adds the new index and triggers) and before
/// every existing row is sealed: the new columns, and the update triggers that now spare the
/// checksum column.
inline constexpr const char* kMigrateFrom1Sql = R"sql(
DROP TRIGGER IF EXISTS versions_immutable;
DROP TRIGGER IF EXISTS artifacts_immutable;
DROP TRIGGER IF EXISTS version_files_immutable;
DROP TRIGGER IF EXISTS task_inputs_immutable;
DROP TRIGGER IF EXISTS runs_immutable;
DROP TRIGGER IF EXISTS tasks_forward_only;
ALTER TABLE versions ADD COLUMN content_key TEXT NOT NULL DEFAULT '';
ALTER TABLE versions ADD COLUMN checksum TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN checksum TEXT NOT NULL DEFAULT '';
ALTER TABLE artifacts ADD COLUMN checksum TEXT NOT NULL DEFAULT '';
ALTER TABLE version_files ADD COLUMN checksum TEXT NOT NULL DEFAULT '';
ALTER TABLE task_inputs ADD COLUMN checksum TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN checksum TEXT NOT NULL DEFAULT '';
)sql";

}  // namespace argus::workspace
