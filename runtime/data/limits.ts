/**
 * @module Limits of one write request (issue "reliability": one request must not stall the others).
 */
/** Rows one POST may create, or one bulk DELETE may delete. */
export const MAX_BULK_ROWS = 1000;
/** Child rows one parent body may carry per child relation. */
export const MAX_CHILDREN_PER_PARENT = 1000;
