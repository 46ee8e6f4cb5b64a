// The workspace database schema (version kSchemaVersion). Rows are append-only: triggers reject
// updates and deletes, except a task's status moving forward once.
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
  created_at INTEGER NOT NULL
);

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
  log_artifact_id INTEGER REFERENCES artifacts(id)
);
CREATE INDEX IF NOT EXISTS tasks_by_memo ON tasks(memo_key, status, id);

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
  location TEXT NOT NULL CHECK(location IN ('file', 'inline'))
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
  PRIMARY KEY(version_id, name)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS task_inputs(
  task_id INTEGER NOT NULL REFERENCES tasks(id),
  position INTEGER NOT NULL,
  artifact_id INTEGER NOT NULL REFERENCES artifacts(id),
  PRIMARY KEY(task_id, position)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS runs(
  id INTEGER PRIMARY KEY,
  task_id INTEGER NOT NULL REFERENCES tasks(id),
  device TEXT NOT NULL,
  backend_config_json TEXT NOT NULL,
  environment_json TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_task ON runs(task_id);

CREATE TRIGGER IF NOT EXISTS versions_immutable BEFORE UPDATE ON versions
  BEGIN SELECT RAISE(ABORT, 'versions are immutable'); END;
CREATE TRIGGER IF NOT EXISTS versions_kept BEFORE DELETE ON versions
  BEGIN SELECT RAISE(ABORT, 'versions are never deleted'); END;
CREATE TRIGGER IF NOT EXISTS artifacts_immutable BEFORE UPDATE ON artifacts
  BEGIN SELECT RAISE(ABORT, 'artifacts are immutable'); END;
CREATE TRIGGER IF NOT EXISTS artifacts_kept BEFORE DELETE ON artifacts
  BEGIN SELECT RAISE(ABORT, 'artifacts are never deleted'); END;
CREATE TRIGGER IF NOT EXISTS version_files_immutable BEFORE UPDATE ON version_files
  BEGIN SELECT RAISE(ABORT, 'version files are immutable'); END;
CREATE TRIGGER IF NOT EXISTS version_files_kept BEFORE DELETE ON version_files
  BEGIN SELECT RAISE(ABORT, 'version files are never deleted'); END;
CREATE TRIGGER IF NOT EXISTS task_inputs_immutable BEFORE UPDATE ON task_inputs
  BEGIN SELECT RAISE(ABORT, 'task inputs are immutable'); END;
CREATE TRIGGER IF NOT EXISTS task_inputs_kept BEFORE DELETE ON task_inputs
  BEGIN SELECT RAISE(ABORT, 'task inputs are never deleted'); END;
CREATE TRIGGER IF NOT EXISTS runs_immutable BEFORE UPDATE ON runs
  BEGIN SELECT RAISE(ABORT, 'runs are immutable'); END;
CREATE TRIGGER IF NOT EXISTS runs_kept BEFORE DELETE ON runs
  BEGIN SELECT RAISE(ABORT, 'runs are never deleted'); END;
CREATE TRIGGER IF NOT EXISTS tasks_kept BEFORE DELETE ON tasks
  BEGIN SELECT RAISE(ABORT, 'tasks are never deleted'); END;
CREATE TRIGGER IF NOT EXISTS tasks_forward_only BEFORE UPDATE ON tasks
  WHEN OLD.status NOT IN ('queued', 'running')
    OR (OLD.status = 'running' AND NEW.status IN ('queued', 'running'))
    OR (OLD.status = 'queued' AND NEW.status = 'queued')
    OR NEW.id IS NOT OLD.id OR NEW.type IS NOT OLD.type OR NEW.memo_key IS NOT OLD.memo_key
    OR NEW.descriptor_json IS NOT OLD.descriptor_json OR NEW.attempt IS NOT OLD.attempt
    OR NEW.version_id IS NOT OLD.version_id OR NEW.queued_at IS NOT OLD.queued_at
  BEGIN SELECT RAISE(ABORT, 'a task''s status only moves forward'); END;
)sql";

}  // namespace argus::workspace
