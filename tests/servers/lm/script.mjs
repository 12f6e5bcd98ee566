// Script loading and expectation checks. A script is validated when it is posted, so a typo
// in a test (an unknown expectation key, a bad fault) fails loudly at load time instead of
// silently passing every call.
import { isObject, isString } from './util.mjs';
import { isDeepStrictEqual } from 'node:util';

const EXPECT_KEYS = new Set([
  'protocol', 'model', 'tools', 'system_contains', 'last_user_contains', 'last_tool_result_contains',
  'last_tool_result_equals', 'last_tool_result_id', 'tool_result_count', 'message_count', 'body_subset',
]);
const FAULT_KEYS = new Set(['status', 'retry_after', 'retry_after_ms', 'headers', 'body', 'reset', 'stall_ms']);
const REPLY_KEYS = new Set(['text', 'tool_calls', 'usage', 'finish_reason', 'stop_reason']);
const MAX_STALL_MS = 10 * 60 * 1000;

export class ScriptError extends Error {}

function fail(i, msg) {
  throw new ScriptError(`step ${i}: ${msg}`);
}

function checkReply(i, r) {
  if (!isObject(r)) fail(i, 'reply must be an object');
  for (const k of Object.keys(r)) if (!REPLY_KEYS.has(k)) fail(i, `unknown reply key '${k}'`);
  if (r.text !== undefined && r.text !== null && !isString(r.text)) fail(i, 'reply.text must be a string or null');
  if (r.tool_calls !== undefined) {
    if (!Array.isArray(r.tool_calls)) fail(i, 'reply.tool_calls must be an array');
    r.tool_calls.forEach((c, k) => {
      if (!isObject(c) || !isString(c.name) || c.name === '') fail(i, `reply.tool_calls[${k}].name must be a non-empty string`);
      for (const key of Object.keys(c)) {
        if (!['name', 'arguments', 'id'].includes(key)) fail(i, `unknown key '${key}' in reply.tool_calls[${k}]`);
      }
      if (c.arguments !== undefined && !isObject(c.arguments) && !isString(c.arguments)) {
        fail(i, `reply.tool_calls[${k}].arguments must be an object or a string`);
      }
      if (c.id !== undefined && !isString(c.id)) fail(i, `reply.tool_calls[${k}].id must be a string`);
    });
  }
  if (r.usage !== undefined) {
    if (!isObject(r.usage)) fail(i, 'reply.usage must be an object');
    for (const k of Object.keys(r.usage)) {
      if (!['input', 'output'].includes(k)) fail(i, `unknown reply.usage key '${k}'`);
      if (!Number.isInteger(r.usage[k]) || r.usage[k] < 0) fail(i, `reply.usage.${k} must be a non-negative integer`);
    }
  }
  for (const k of ['finish_reason', 'stop_reason']) if (r[k] !== undefined && !isString(r[k])) fail(i, `reply.${k} must be a string`);
}

function checkFault(i, f) {
  if (!isObject(f)) fail(i, 'fault must be an object');
  for (const k of Object.keys(f)) if (!FAULT_KEYS.has(k)) fail(i, `unknown fault key '${k}'`);
  if (f.status !== undefined && (!Number.isInteger(f.status) || f.status < 200 || f.status > 599)) {
    fail(i, 'fault.status must be an integer HTTP status (200-599)');
  }
  if (f.reset !== undefined && f.reset !== true) fail(i, 'fault.reset must be true when present');
  if (f.reset && f.status !== undefined) fail(i, 'fault cannot have both reset and status');
  if (f.stall_ms !== undefined && (!Number.isInteger(f.stall_ms) || f.stall_ms < 0 || f.stall_ms > MAX_STALL_MS)) {
    fail(i, `fault.stall_ms must be an integer in [0, ${MAX_STALL_MS}]`);
  }
  if (f.status === undefined && !f.reset && f.stall_ms === undefined) fail(i, 'fault needs status, reset or stall_ms');
  for (const k of ['retry_after', 'retry_after_ms']) {
    if (f[k] !== undefined && typeof f[k] !== 'number' && !isString(f[k])) fail(i, `fault.${k} must be a number or a string`);
  }
  if ((f.retry_after !== undefined || f.retry_after_ms !== undefined || f.body !== undefined || f.headers !== undefined) &&
      f.status === undefined) {
    fail(i, 'retry_after, retry_after_ms, headers and body need a status');
  }
  if (f.headers !== undefined) {
    if (!isObject(f.headers) || !Object.values(f.headers).every(isString)) fail(i, 'fault.headers must map names to strings');
  }
}

function checkExpect(i, e) {
  if (!isObject(e)) fail(i, 'expect must be an object');
  for (const k of Object.keys(e)) if (!EXPECT_KEYS.has(k)) fail(i, `unknown expectation '${k}'`);
  if (e.protocol !== undefined && !['openai', 'anthropic'].includes(e.protocol)) fail(i, "expect.protocol must be 'openai' or 'anthropic'");
  for (const k of ['model', 'system_contains', 'last_user_contains', 'last_tool_result_contains', 'last_tool_result_equals',
    'last_tool_result_id']) {
    if (e[k] !== undefined && !isString(e[k])) fail(i, `expect.${k} must be a string`);
  }
  for (const k of ['message_count', 'tool_result_count']) {
    if (e[k] !== undefined && (!Number.isInteger(e[k]) || e[k] < 0)) fail(i, `expect.${k} must be a non-negative integer`);
  }
  if (e.tools !== undefined && (!Array.isArray(e.tools) || !e.tools.every(isString))) fail(i, 'expect.tools must be an array of names');
  if (e.body_subset !== undefined && !isObject(e.body_subset)) fail(i, 'expect.body_subset must be an object');
}

export function parseScript(doc) {
  if (!isObject(doc) || !Array.isArray(doc.steps)) throw new ScriptError('script must be {"steps":[...]}');
  for (const k of Object.keys(doc)) if (k !== 'steps') throw new ScriptError(`unknown script key '${k}'`);
  doc.steps.forEach((s, i) => {
    if (!isObject(s)) fail(i, 'must be an object');
    for (const k of Object.keys(s)) if (!['expect', 'reply', 'fault', 'stall_ms'].includes(k)) fail(i, `unknown key '${k}'`);
    if ((s.reply === undefined) === (s.fault === undefined)) fail(i, 'needs exactly one of reply or fault');
    if (s.fault !== undefined) {
      checkFault(i, s.fault);
      if (s.expect !== undefined) fail(i, 'a fault step takes no expect (the fault answers whatever arrives)');
      if (s.stall_ms !== undefined) fail(i, 'put stall_ms inside the fault for a fault step');
    } else {
      checkReply(i, s.reply);
      if (s.expect !== undefined) checkExpect(i, s.expect);
      if (s.stall_ms !== undefined && (!Number.isInteger(s.stall_ms) || s.stall_ms < 0 || s.stall_ms > MAX_STALL_MS)) {
        fail(i, `stall_ms must be an integer in [0, ${MAX_STALL_MS}]`);
      }
    }
  });
  return doc.steps;
}

// Partial deep match: every key in `want` must be present in `got` with a matching value;
// arrays must have the same length and match element-wise; scalars compare strictly.
function subsetMismatch(want, got, path) {
  if (isObject(want)) {
    if (!isObject(got)) return `${path}: expected an object`;
    for (const [k, v] of Object.entries(want)) {
      if (!(k in got)) return `${path}.${k}: missing`;
      const m = subsetMismatch(v, got[k], `${path}.${k}`);
      if (m) return m;
    }
    return null;
  }
  if (Array.isArray(want)) {
    if (!Array.isArray(got)) return `${path}: expected an array`;
    if (want.length !== got.length) return `${path}: expected ${want.length} elements, got ${got.length}`;
    for (let k = 0; k < want.length; k++) {
      const m = subsetMismatch(want[k], got[k], `${path}[${k}]`);
      if (m) return m;
    }
    return null;
  }
  return isDeepStrictEqual(want, got) ? null : `${path}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`;
}

const show = (s) => (s === null || s === undefined ? 'nothing' : JSON.stringify(s.length > 200 ? `${s.slice(0, 200)}…` : s));

// Returns a list of failed checks, each `{check, message}`; empty when all pass.
export function evaluate(expect, protocol, summary, body) {
  const out = [];
  const f = (check, message) => out.push({ check, message });
  if (!expect) return out;
  if (expect.protocol !== undefined && expect.protocol !== protocol) f('protocol', `expected a ${expect.protocol} call, got ${protocol}`);
  if (expect.model !== undefined && expect.model !== summary.model) f('model', `expected model ${show(expect.model)}, got ${show(summary.model)}`);
  if (expect.tools !== undefined && !isDeepStrictEqual(expect.tools, summary.tools)) {
    f('tools', `expected tools ${JSON.stringify(expect.tools)}, got ${JSON.stringify(summary.tools)}`);
  }
  if (expect.system_contains !== undefined && !summary.system.includes(expect.system_contains)) {
    f('system_contains', `system prompt does not contain ${show(expect.system_contains)}; it is ${show(summary.system)}`);
  }
  if (expect.last_user_contains !== undefined && !(summary.lastUser ?? '').includes(expect.last_user_contains)) {
    f('last_user_contains', `last user text does not contain ${show(expect.last_user_contains)}; it is ${show(summary.lastUser)}`);
  }
  const tr = summary.lastTool;
  if (expect.last_tool_result_contains !== undefined && !(tr && tr.text.includes(expect.last_tool_result_contains))) {
    f('last_tool_result_contains', `last tool result does not contain ${show(expect.last_tool_result_contains)}; it is ${show(tr?.text)}`);
  }
  if (expect.last_tool_result_equals !== undefined && !(tr && tr.text === expect.last_tool_result_equals)) {
    f('last_tool_result_equals', `last tool result is not ${show(expect.last_tool_result_equals)}; it is ${show(tr?.text)}`);
  }
  if (expect.last_tool_result_id !== undefined && !(tr && tr.id === expect.last_tool_result_id)) {
    f('last_tool_result_id', `last tool result refers to ${show(tr?.id)}, expected ${show(expect.last_tool_result_id)}`);
  }
  if (expect.tool_result_count !== undefined && expect.tool_result_count !== summary.toolResults) {
    f('tool_result_count', `expected ${expect.tool_result_count} tool results, got ${summary.toolResults}`);
  }
  if (expect.message_count !== undefined && expect.message_count !== summary.messageCount) {
    f('message_count', `expected ${expect.message_count} messages, got ${summary.messageCount}`);
  }
  if (expect.body_subset !== undefined) {
    const m = subsetMismatch(expect.body_subset, body, 'body');
    if (m) f('body_subset', m);
  }
  return out;
}
