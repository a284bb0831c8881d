// The SQLite export: one table per record kind, its columns drawn from the record schema
// (record_schema.h) so that a new field needs no change here, plus ranks (with their place in
// the layout when known), communicators, strings and meta.
// Every time column (`*_ns`) is on the run's common clock; ranks.clock_offset_ns gives back the raw
// value. Unsigned 64-bit fields (communicator ids) are stored as their signed 64-bit pattern.
#include <sqlite3.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string_view>
#include <unordered_map>

#include "pipescope/export/export.h"
#include "pipescope/export/output_file.h"
#include "pipescope/trace/record_schema.h"
#include "trace_walk.h"

namespace pipescope::exporter {
namespace {

// 2: ranks.stage / tp_rank / dp_rank, communicators, communicator_members.
constexpr int kSqliteSchemaVersion = 2;

using Statement = std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)>;

bool is_column(const trace::FieldDesc& f) {
  const std::string_view name = f.name;
  return name != "kind" && name != "size_bytes" && !name.starts_with("reserved");
}
bool is_time(const trace::FieldDesc& f) { return std::string_view(f.name).ends_with("_ns"); }

std::string table_of(const trace::RecordSchema& s) { return s.name; }
// Every table's `rank` is the trace's global rank; a record's own rank field (nccl_comm's rank in
// its communicator) becomes comm_rank.
std::string column_of(const trace::FieldDesc& f) {
  return std::string_view(f.name) == "rank" ? std::string("comm_rank") : std::string(f.name);
}

Status exec(sqlite3* db, const std::string& sql) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message != nullptr ? message : "unknown error";
    sqlite3_free(message);
    return Error("SQLite: " + text + " (in: " + sql.substr(0, 80) + ")");
  }
  return Status::Ok();
}

Expected<Statement> prepare(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK)
    return Error(std::string("SQLite: ") + sqlite3_errmsg(db));
  return Statement(raw, &sqlite3_finalize);
}

}  // namespace

// An existing output is replaced only when it is an earlier pipescope export (or empty).
Status check_sqlite_output(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::Ok();
  if (std::filesystem::is_directory(path, ec)) return Error(path + " is a directory; name a file");
  if (std::filesystem::file_size(path, ec) == 0 && !ec) return Status::Ok();
  sqlite3* raw = nullptr;
  bool ours = false;
  if (sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(raw, "SELECT value FROM meta WHERE key='tool'", -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
      ours = text != nullptr && std::string_view(text) == "pipescope";
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(raw);
  if (!ours) return Error(path + " exists and is not a pipescope export; choose another -o FILE");
  return Status::Ok();
}

namespace {

struct KindTable {
  const trace::RecordSchema* schema = nullptr;
  std::vector<const trace::FieldDesc*> columns;
  Statement insert{nullptr, &sqlite3_finalize};
};

Status create_tables(sqlite3* db, std::unordered_map<uint16_t, KindTable>& tables) {
  std::string sql =
      "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
      "CREATE TABLE ranks(rank INTEGER PRIMARY KEY, path TEXT, host TEXT, pid INTEGER, run_id TEXT, attempt "
      "INTEGER, world_size INTEGER, clock_offset_ns INTEGER, valid_bytes INTEGER, total_bytes INTEGER, stop "
      "TEXT, stage INTEGER, tp_rank INTEGER, dp_rank INTEGER);"
      "CREATE TABLE communicators(comm_id INTEGER PRIMARY KEY, comm_id_hex TEXT, size INTEGER, role TEXT, "
      "members TEXT);"
      "CREATE TABLE communicator_members(comm_id INTEGER, comm_rank INTEGER, rank INTEGER, "
      "PRIMARY KEY(comm_id, comm_rank));"
      "CREATE TABLE strings(rank INTEGER, id INTEGER, text TEXT, PRIMARY KEY(rank, id));";
  for (const trace::RecordSchema& s : trace::record_schemas()) {
    KindTable& t = tables[static_cast<uint16_t>(s.kind)];
    t.schema = &s;
    std::string columns = "rank INTEGER";
    for (const trace::FieldDesc& f : s.fields) {
      if (!is_column(f)) continue;
      t.columns.push_back(&f);
      columns += ", " + column_of(f) + " INTEGER";
    }
    sql += "CREATE TABLE " + table_of(s) + "(" + columns + ");";
  }
  if (Status st = exec(db, sql); !st) return st;
  for (auto& [kind, t] : tables) {
    std::string marks = "?";
    for (size_t i = 0; i < t.columns.size(); ++i) marks += ",?";
    auto insert = prepare(db, "INSERT INTO " + table_of(*t.schema) + " VALUES(" + marks + ")");
    if (!insert) return insert.error();
    t.insert = std::move(*insert);
  }
  return Status::Ok();
}

Status finish(sqlite3* db) {
  std::string sql;
  for (const trace::RecordSchema& s : trace::record_schemas()) {
    std::string time_column;
    for (const trace::FieldDesc& f : s.fields)
      if (is_time(f) && time_column.empty()) time_column = column_of(f);
    if (!time_column.empty())
      sql += "CREATE INDEX " + table_of(s) + "_rank_time ON " + table_of(s) + "(rank, " + time_column + ");";
  }
  // The names of NCCL operation types, to join with nccl_ops.op.
  sql += "CREATE TABLE nccl_op_types(op INTEGER PRIMARY KEY, name TEXT);";
  for (uint8_t op = 1; op <= 10; ++op)
    sql += "INSERT INTO nccl_op_types VALUES(" + std::to_string(op) + ",'" + trace::nccl_op_name(op) + "');";
  return exec(db, sql);
}

Status write_communicators(sqlite3* db, const std::vector<ExportCommunicator>& communicators) {
  auto comm_insert = prepare(db, "INSERT INTO communicators VALUES(?,?,?,?,?)");
  auto member_insert = prepare(db, "INSERT INTO communicator_members VALUES(?,?,?)");
  if (!comm_insert) return comm_insert.error();
  if (!member_insert) return member_insert.error();
  if (Status st = exec(db, "BEGIN"); !st) return st;
  for (const ExportCommunicator& c : communicators) {
    char hex[24];
    std::snprintf(hex, sizeof(hex), "%016" PRIx64, c.comm_id);
    std::string members;
    for (size_t m = 0; m < c.members.size(); ++m)
      members += (m == 0 ? "" : ",") + (c.members[m] < 0 ? std::string("?") : std::to_string(c.members[m]));
    sqlite3_stmt* s = comm_insert->get();
    sqlite3_bind_int64(s, 1, static_cast<int64_t>(c.comm_id));
    sqlite3_bind_text(s, 2, hex, -1, SQLITE_TRANSIENT);
    if (c.size > 0) {
      sqlite3_bind_int64(s, 3, c.size);
    } else {
      sqlite3_bind_null(s, 3);
    }
    if (c.role.empty()) {
      sqlite3_bind_null(s, 4);
    } else {
      sqlite3_bind_text(s, 4, c.role.c_str(), -1, SQLITE_TRANSIENT);
    }
    sqlite3_bind_text(s, 5, members.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(s) != SQLITE_DONE)
      return Error("SQLite: " + std::string(sqlite3_errmsg(db)) + " (communicator " + hex +
                   " listed twice?)");
    sqlite3_reset(s);
    for (size_t m = 0; m < c.members.size(); ++m) {
      if (c.members[m] < 0) continue;
      sqlite3_stmt* row = member_insert->get();
      sqlite3_bind_int64(row, 1, static_cast<int64_t>(c.comm_id));
      sqlite3_bind_int64(row, 2, static_cast<int64_t>(m));
      sqlite3_bind_int64(row, 3, c.members[m]);
      sqlite3_step(row);
      sqlite3_reset(row);
    }
  }
  return exec(db, "COMMIT");
}

// The whole export into `db` (the temporary file's database, which the caller closes).
Expected<ExportSummary> write_database(sqlite3* db, const ExportOptions& options) {
  if (Status st = exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"); !st) return st.error();
  std::unordered_map<uint16_t, KindTable> tables;
  if (Status st = create_tables(db, tables); !st) return st.error();
  auto rank_insert = prepare(db, "INSERT INTO ranks VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  auto string_insert = prepare(db, "INSERT INTO strings VALUES(?,?,?)");
  if (!rank_insert) return rank_insert.error();
  if (!string_insert) return string_insert.error();

  ExportSummary summary;
  for (const ExportRank& rank : options.ranks) {
    if (Status st = exec(db, "BEGIN"); !st) return st.error();
    Status failure;
    WalkVisitor visitor;
    visitor.on_record = [&](const trace::RecordView& view, const trace::StringTable&) {
      auto it = tables.find(static_cast<uint16_t>(view.kind));
      if (it == tables.end() || !failure) return;
      KindTable& t = it->second;
      if (view.bytes.size() < t.schema->size_bytes) return;  // a 1.0 record of a grown kind: skip
      int64_t first_time = INT64_MIN, last_time = INT64_MIN;
      sqlite3_stmt* s = t.insert.get();
      sqlite3_bind_int64(s, 1, rank.rank);
      for (size_t c = 0; c < t.columns.size(); ++c) {
        const trace::FieldDesc& f = *t.columns[c];
        int64_t value = trace::read_signed_field(view.bytes.data(), f);
        if (is_time(f) && value != 0) {
          value += rank.clock_offset_ns;
          if (first_time == INT64_MIN) first_time = value;
          last_time = value;
        }
        sqlite3_bind_int64(s, static_cast<int>(c) + 2, value);
      }
      if (options.window_ns && first_time != INT64_MIN &&
          (last_time < options.window_ns->first || first_time >= options.window_ns->second)) {
        sqlite3_reset(s);
        return;
      }
      if (sqlite3_step(s) != SQLITE_DONE) failure = Error(std::string("SQLite: ") + sqlite3_errmsg(db));
      sqlite3_reset(s);
      ++summary.records_written;
    };
    visitor.on_end = [&](const trace::StringTable& strings) {
      sqlite3_stmt* s = string_insert->get();
      for (uint32_t id = 1; id <= strings.size(); ++id) {
        const std::string_view text = strings.get(id);
        sqlite3_bind_int64(s, 1, rank.rank);
        sqlite3_bind_int64(s, 2, id);
        sqlite3_bind_text(s, 3, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
        sqlite3_step(s);
        sqlite3_reset(s);
      }
    };
    auto walked = walk_trace(rank.path, visitor);
    if (!walked) return walked.error();
    if (!failure) return failure.error();
    sqlite3_stmt* s = rank_insert->get();
    const trace::ProcessInfo& p = walked->process;
    sqlite3_bind_int64(s, 1, rank.rank);
    sqlite3_bind_text(s, 2, (rank.source_path.empty() ? rank.path : rank.source_path).c_str(), -1,
                      SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 3, walked->header.host.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 4, walked->header.pid);
    sqlite3_bind_text(s, 5, p.run_id.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 6, p.restart_attempt.value_or(0));
    sqlite3_bind_int64(s, 7, p.world_size.value_or(0));
    sqlite3_bind_int64(s, 8, rank.clock_offset_ns);
    sqlite3_bind_int64(s, 9, static_cast<int64_t>(walked->valid_bytes));
    sqlite3_bind_int64(s, 10, static_cast<int64_t>(walked->total_bytes));
    sqlite3_bind_text(s, 11, trace::stop_reason_name(walked->stop), -1, SQLITE_STATIC);
    const auto place = std::find_if(options.places.begin(), options.places.end(),
                                    [&](const ExportRankPlace& known) { return known.rank == rank.rank; });
    for (int column = 12; column <= 14; ++column) sqlite3_bind_null(s, column);
    if (place != options.places.end()) {
      sqlite3_bind_int64(s, 12, place->stage);
      sqlite3_bind_int64(s, 13, place->tp_rank);
      sqlite3_bind_int64(s, 14, place->dp_rank);
    }
    if (sqlite3_step(s) != SQLITE_DONE)
      return Error("SQLite: " + std::string(sqlite3_errmsg(db)) + " (rank " + std::to_string(rank.rank) +
                   " listed twice?)");
    sqlite3_reset(s);
    if (Status st = exec(db, "COMMIT"); !st) return st.error();
    if (std::string w = recovery_warning(rank.rank, *walked); !w.empty()) summary.warnings.push_back(w);
  }
  if (Status st = write_communicators(db, options.communicators); !st) return st.error();
  if (Status st = finish(db); !st) return st.error();
  if (Status st = exec(db, "INSERT INTO meta VALUES('tool','pipescope'),('schema_version','" +
                               std::to_string(kSqliteSchemaVersion) + "')");
      !st)
    return st.error();
  return summary;
}

}  // namespace

Expected<ExportSummary> export_sqlite(const ExportOptions& options) {
  if (Status st = check_sqlite_output(options.output_path); !st) return st.error();
  auto output = OutputFile::create(options.output_path);
  if (!output) return Error("cannot write " + output.error().message);
  sqlite3* raw = nullptr;
  if (sqlite3_open(output->temp_path().c_str(), &raw) != SQLITE_OK) {
    sqlite3_close(raw);
    return Error("cannot create " + options.output_path);
  }
  auto summary = write_database(raw, options);
  if (sqlite3_close(raw) != SQLITE_OK && summary) return Error("cannot write " + options.output_path);
  if (!summary) return summary.error();
  std::error_code ec;
  summary->bytes_written = std::filesystem::file_size(output->temp_path(), ec);
  if (Status committed = output->commit(); !committed) return committed.error();
  return summary;
}

}  // namespace pipescope::exporter
