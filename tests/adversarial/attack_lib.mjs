// Shared helpers for the adversarial node tests: the e2e harness (server start, official MCP
// client, engine look-ups) plus checks every attack ends with.
export * from '../e2e/harness.mjs';
export * from './leak_checks.mjs';
