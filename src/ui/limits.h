/*
 * limits.h - every bound of the web view in one place (D9): what a request
 * may carry and what a page may show. Exceeding an input bound is a coded
 * error answer (ui.url-too-long, ui.query-too-large, ui.body-too-large,
 * ui.field-too-large, ...), never a crash and never silent truncation;
 * output bounds are said on the page ("… N more not shown").
 *
 * What it must never do: hold anything but constants.
 */
#ifndef SPORE_UI_LIMITS_H
#define SPORE_UI_LIMITS_H

/* ---- what a request may carry ---- */
#define UI_URL_MAX 1024           /* the path */
#define UI_QUERY_ARGS_MAX 8       /* query parameters */
#define UI_QUERY_VALUE_MAX 256    /* bytes of one query parameter (key + value) */
#define UI_BODY_MAX (64 * 1024)   /* bytes of a POST body */
#define UI_FIELDS_MAX 12          /* form fields of a POST */
#define UI_FIELD_MAX (32 * 1024)  /* bytes of one form field (signal data, output) */
#define UI_POST_BUFFER 4096       /* the post processor's buffer */

/* ---- connections ---- */
#define UI_CONNECTIONS_MAX 32          /* at a time (a thread each) */
#define UI_CONNECTION_MEMORY (64 * 1024) /* per connection: request line and headers */
#define UI_CONNECTION_TIMEOUT_S 30     /* idle connections are closed */
#define UI_SSE_MAX 8                   /* live streams at a time */
#define UI_SSE_LIFETIME_S 600          /* a stream ends after this; the page reconnects */
#define UI_SSE_POLL_MS 250             /* how often a stream looks at its run */
#define UI_SSE_PING_S 10               /* a comment line keeps idle streams open */

/* ---- what a page shows ---- */
#define UI_PAGE_SIZE_DEFAULT 25
#define UI_PAGE_SIZE_MAX 100
#define UI_PAGE_MAX 1000000
#define UI_EVENTS_SHOWN 200      /* the latest events of a run */
#define UI_REPLAY_EVENTS_MAX 20000 /* events replayed for a picture's edge counts */
#define UI_ATTEMPTS_SHOWN 64     /* the first attempts of a run, in the order they ended */
#define UI_LOG_SHOWN (16 * 1024) /* bytes of one stream of one attempt (the end of it) */
#define UI_JSON_SHOWN (16 * 1024) /* bytes of an input, result or output */

/* ---- the token ---- */
#define UI_TOKEN_MIN 16
#define UI_TOKEN_MAX 256

#endif
