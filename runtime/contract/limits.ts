/**
 * @module Size and count limits of the HTTP API (SPEC §4.2, DESIGN §4 "Data details"), defined once:
 * the runtime enforces them and the generator publishes them in the OpenAPI document.
 */

/** Rows per page when a list request has no `pageSize` (SPEC §4.2). */
export const DEFAULT_PAGE_SIZE = 10;

/** Largest `pageSize`; above it a list answers 400 INVALID_PARAMETER (DESIGN §4). */
export const MAX_PAGE_SIZE = 1000;

/** Largest request body in bytes (10 MiB); above it the answer is 413 PAYLOAD_TOO_LARGE. */
export const MAX_BODY_BYTES = 10 * 1024 * 1024;

/** Largest JSON answer of a list or read in bytes (5 MiB); above it the answer is 400 RESULT_TOO_LARGE. */
export const MAX_RESULT_BYTES = 5 * 1024 * 1024;

/**
 * Most rows in one bulk write: the array of a POST (create many) or the ids of a DELETE (delete many).
 * More is a 400 VALIDATION_FAILED before anything is written.
 */
export const MAX_BULK_ROWS = 1000;

/**
 * Most children under one `<Child>.<lookup>` key of one parent in a POST, PUT or PATCH body (SPEC §4.4).
 * More is a 400 VALIDATION_FAILED before anything is written.
 */
export const MAX_CHILDREN_PER_PARENT = 1000;

/**
 * Most comparisons (predicates) in one filter expression (SPEC §4.3), counting every `eq`, `sw`, … and
 * function call; more is a 400 INVALID_FILTER. Bounds the SQL a single request can make.
 */
export const MAX_FILTER_PREDICATES = 100;

/**
 * Most lookups one dot path may walk (`customer.owner.name` walks 2) in a filter, select or sort;
 * more is a 400 (INVALID_FILTER or INVALID_PARAMETER). Bounds the joins a single request can make.
 */
export const MAX_LOOKUP_HOPS = 3;

/**
 * Digits of a decimal: PostgreSQL stores `decimal` as `numeric(65, 30)`, so at most 35 digits before
 * the point; larger values are refused with 400 on both backends (SQLite included, for one behaviour).
 */
export const DECIMAL_PRECISION = 65;
export const DECIMAL_SCALE = 30;
export const DECIMAL_INTEGER_DIGITS = DECIMAL_PRECISION - DECIMAL_SCALE;

/** The range of an `integer` property without its own bounds: a 32-bit signed integer. */
export const INT32_MIN = -2147483648;
export const INT32_MAX = 2147483647;

/**
 * Days the agent's credits per minute are kept (`_svc_agent_credit_usage`, runtime/agent/credit-usage.ts):
 * `GET /api/_admin/agent/usage` with a step that is not whole hours reaches back this far (400 beyond).
 * Credits per hour are kept {@link AGENT_USAGE_HOUR_KEEP_DAYS} days.
 */
export const AGENT_USAGE_MINUTE_KEEP_DAYS = 35;
/** Days the agent's credits per hour are kept (the per-day chart of the console reads them). */
export const AGENT_USAGE_HOUR_KEEP_DAYS = 400;
