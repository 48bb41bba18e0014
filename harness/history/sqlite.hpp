#pragma once
// A thin RAII layer over the SQLite C API: a connection, prepared statements and a
// transaction that rolls back unless committed. Errors throw SystemError with SQLite's message.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "util/files.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace ks::history {

class Statement;

class Database {
 public:
  explicit Database(const std::filesystem::path& path);  // opens or creates the file
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  void exec(const std::string& sql);  // one or more statements without results
  Statement prepare(const std::string& sql);
  int64_t last_insert_id() const;
  sqlite3* handle() const { return db_; }

 private:
  // Under sudo, everything SQLite opens, makes or deletes while the database is open is done
  // as the invoking user (forty-seventh attack: a hot journal beside their history named a
  // super-journal, root's file, which SQLite's rollback deleted as root).
  AsInvokingUser as_;
  sqlite3* db_ = nullptr;
};

class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql);
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are numbered from 1, as in SQL's ?1 ?2 ...
  Statement& bind(int index, const std::string& value);
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, std::optional<double> value);  // nullopt binds NULL
  bool step();  // true while there is a row to read
  void run();   // steps a statement that returns no rows

  // Columns are numbered from 0.
  std::string text(int column) const;
  int64_t integer(int column) const;
  std::optional<double> real(int column) const;  // nullopt for NULL

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE now; ROLLBACK when the scope ends without commit(), so an exception
// (or a crash: SQLite's journal) leaves the file as it was before the transaction.
class Transaction {
 public:
  explicit Transaction(Database& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Database& db_;
  bool open_ = true;
};

}  // namespace ks::history
