#include "history/sqlite.hpp"

#include <sqlite3.h>

#include "proc/runner.hpp"
#include "util/error.hpp"

namespace ks::history {
namespace {

[[noreturn]] void fail(sqlite3* db, const std::string& what) {
  throw SystemError("sqlite: " + what, db ? sqlite3_errmsg(db) : "out of memory");
}

}  // namespace

Database::Database(const std::filesystem::path& path) {
  // Never through a link: a planted one would have root create or write any file. Under sudo,
  // opened as the invoking user (as_; forty-sixth attack: a history of root's they could not
  // read was listed for them).
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW,
                      nullptr) != SQLITE_OK) {
    std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw UserError("cannot open the history " + path.string() + (as_.who().empty() ? "" : " as " + as_.who()) + ": " + message,
                    "pass a path in a writable directory with --history");
  }
  sqlite3_busy_timeout(db_, 10000);  // another writer (a nightly job) holds the lock briefly
  // A history file may come from someone else: its schema runs no function of theirs with
  // side effects, it cannot be corrupted by crafted SQL, and a query that never ends (a view
  // over an endless recursive CTE) still stops at Ctrl-C or SIGTERM.
  sqlite3_db_config(db_, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_progress_handler(db_, 100000, [](void*) { return proc::interrupted() ? 1 : 0; }, nullptr);
}

Database::~Database() { sqlite3_close(db_); }

void Database::exec(const std::string& sql) {
  char* message = nullptr;
  if (int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message); rc != SQLITE_OK) {
    std::string text = message ? message : sqlite3_errmsg(db_);
    sqlite3_free(message);
    if (rc == SQLITE_INTERRUPT) throw Interrupted();
    throw SystemError("sqlite: " + sql.substr(0, 60), text);
  }
}

Statement Database::prepare(const std::string& sql) { return Statement(db_, sql); }

int64_t Database::last_insert_id() const { return sqlite3_last_insert_rowid(db_); }

Statement::Statement(sqlite3* db, const std::string& sql) : db_(db) {
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK) fail(db, "prepare " + sql.substr(0, 60));
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement::Statement(Statement&& other) noexcept : db_(other.db_), stmt_(other.stmt_) { other.stmt_ = nullptr; }

Statement& Statement::bind(int index, const std::string& value) {
  if (sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT) != SQLITE_OK)
    fail(db_, "bind");
  return *this;
}

Statement& Statement::bind(int index, int64_t value) {
  if (sqlite3_bind_int64(stmt_, index, value) != SQLITE_OK) fail(db_, "bind");
  return *this;
}

Statement& Statement::bind(int index, std::optional<double> value) {
  int rc = value ? sqlite3_bind_double(stmt_, index, *value) : sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK) fail(db_, "bind");
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  if (rc == SQLITE_INTERRUPT) throw Interrupted();
  fail(db_, "step");
}

void Statement::run() {
  while (step()) {
  }
}

std::string Statement::text(int column) const {
  auto* p = sqlite3_column_text(stmt_, column);
  return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, column)) : std::string();
}

int64_t Statement::integer(int column) const { return sqlite3_column_int64(stmt_, column); }

std::optional<double> Statement::real(int column) const {
  if (sqlite3_column_type(stmt_, column) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_double(stmt_, column);
}

Transaction::Transaction(Database& db) : db_(db) {
  try {
    db_.exec("BEGIN IMMEDIATE");
  } catch (const SystemError& e) {
    if (std::string_view(e.what()).find("locked") == std::string_view::npos) throw;
    throw UserError(std::string("the history is locked by another writer (") + e.what() + ")",
                    "wait for the `history add` or `nightly` writing it to finish, then run this again");
  }
}

Transaction::~Transaction() {
  if (!open_) return;
  try {
    db_.exec("ROLLBACK");
  } catch (...) {  // nothing to do: SQLite rolls back an unfinished transaction on close
  }
}

void Transaction::commit() {
  db_.exec("COMMIT");
  open_ = false;
}

}  // namespace ks::history
