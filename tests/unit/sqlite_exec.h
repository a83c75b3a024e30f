/*
 * sqlite_exec.h - the unit tests of the SQLite store's pieces (the VFS, the
 * page cache): one SQL script through sqlite3_exec, a failed check naming
 * the caller's line when it fails.
 */
#ifndef SPORE_TESTS_SQLITE_EXEC_H
#define SPORE_TESTS_SQLITE_EXEC_H

#include <sqlite3.h>

#include "check.h"

#define exec_ok(db, sql) exec_ok_at(__FILE__, __LINE__, (db), (sql))

static inline void exec_ok_at(const char *file, int line, sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        check_fail(file, line, "%s: %s", sql, msg ? msg : sqlite3_errstr(rc));
    sqlite3_free(msg);
}

#endif
