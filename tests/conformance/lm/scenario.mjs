#!/usr/bin/env node
// Conformance: the official `openai` and `@anthropic-ai/sdk` clients must complete full
// tool-calling conversations, retries and error paths against tests/servers/lm/server.mjs.
// If they do, the server's wire shapes are the real APIs' shapes, and a C++ invoker tested
// against it is tested against the protocol rather than against our own assumptions.
//
//   node tests/conformance/lm/scenario.mjs      (exit 0 only if every check passes)
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import assert from 'node:assert/strict';

// Clients read OPENAI_* / ANTHROPIC_* variables (base URL, custom headers, profiles); clear
// them so the run depends only on what this script passes.
for (const k of Object.keys(process.env)) if (/^(OPENAI|ANTHROPIC)_/.test(k)) delete process.env[k];

const { default: OpenAI } = await import('openai');
const { default: Anthropic } = await import('@anthropic-ai/sdk');

const here = path.dirname(fileURLToPath(import.meta.url));
const SERVER = path.resolve(here, '../../servers/lm/server.mjs');
const OPENAI_KEY = 'test-openai-key';
const ANTHROPIC_KEY = 'test-anthropic-key';
const WRONG_KEY = 'wrong-key-7f3a9c';
const SCHEMA = { type: 'object', properties: { code: { type: 'string' } }, required: ['code'] };
const SYSTEM = 'You can run Python code in a sandbox with the execute_code tool.';
const QUESTION = 'What is 2+2? Use code.';

let passed = 0;
let failed = 0;
function ok(name) { passed += 1; console.log(`PASS ${name}`); }
function bad(name, err) {
  failed += 1;
  console.log(`FAIL ${name}: ${String(err?.message ?? err).split('\n')[0]}`);
}
// One line per check.
function check(name, fn) {
  try { fn(); ok(name); } catch (err) { bad(name, err); }
}
// A group whose calls may throw; a throw is one failed line and the group stops.
async function group(name, fn) {
  try { await fn(); } catch (err) { bad(`${name} (aborted)`, err); }
}
async function rejectsWith(name, promise, Cls, extra = () => {}) {
  try {
    await promise;
    bad(name, new Error(`expected ${Cls.name}, but the call succeeded`));
    return null;
  } catch (err) {
    try {
      assert.ok(err instanceof Cls, `expected ${Cls.name}, got ${err?.constructor?.name}: ${err?.message}`);
      extra(err);
      ok(name);
    } catch (e) { bad(name, e); }
    return err;
  }
}

// ---- server lifecycle ---------------------------------------------------------------------
const child = spawn(process.execPath, [SERVER], { stdio: ['pipe', 'pipe', 'inherit'] });
const watchdog = setTimeout(() => { console.log('FAIL watchdog: scenario exceeded 60 s'); child.kill('SIGKILL'); process.exit(1); }, 60_000);
const firstLine = await new Promise((resolve, reject) => {
  const rl = createInterface({ input: child.stdout });
  rl.once('line', (l) => { rl.close(); resolve(l); });
  child.once('exit', (c) => reject(new Error(`server exited early (${c})`)));
});
const { url } = JSON.parse(firstLine);
check('server prints one {"url"} line', () => assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/));

async function control(method, p, body) {
  const r = await fetch(url + p, { method, headers: { 'content-type': 'application/json' }, body: body && JSON.stringify(body) });
  const j = await r.json();
  if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${JSON.stringify(j)}`);
  return j;
}
const setScript = (steps) => control('POST', '/_control/script', { steps });
const getLog = () => control('GET', '/_control/log');

const oa = (opts = {}) => new OpenAI({ baseURL: `${url}/v1`, apiKey: OPENAI_KEY, maxRetries: 0, ...opts });
const an = (opts = {}) => new Anthropic({ baseURL: url, apiKey: ANTHROPIC_KEY, maxRetries: 0, ...opts });
const oaTools = [{ type: 'function', function: { name: 'execute_code', description: 'Run Python code.', parameters: SCHEMA } }];
const anTools = [{ name: 'execute_code', description: 'Run Python code.', input_schema: SCHEMA }];

try {
  // ---- OpenAI: full tool-calling conversation -------------------------------------------
  await group('openai loop', async () => {
    await setScript([
      {
        expect: { protocol: 'openai', model: 'gpt-test', tools: ['execute_code'], system_contains: 'sandbox',
          last_user_contains: '2+2', message_count: 2, tool_result_count: 0 },
        reply: { tool_calls: [{ name: 'execute_code', arguments: { code: 'print(2+2)' } }], usage: { input: 21, output: 9 } },
      },
      {
        expect: { protocol: 'openai', last_tool_result_equals: '4\n', last_tool_result_id: 'call_1', message_count: 4,
          tool_result_count: 1, tools: ['execute_code'] },
        reply: { text: '2+2 is 4.', usage: { input: 40, output: 7 } },
      },
    ]);
    const client = oa();
    const messages = [{ role: 'system', content: SYSTEM }, { role: 'user', content: QUESTION }];
    const r1 = await client.chat.completions.create({ model: 'gpt-test', messages, tools: oaTools });
    const c1 = r1.choices[0];
    check('openai call 1: object/id/model', () => assert.deepEqual([r1.object, r1.id, r1.model], ['chat.completion', 'chatcmpl-1', 'gpt-test']));
    check('openai call 1: finish_reason tool_calls', () => assert.equal(c1.finish_reason, 'tool_calls'));
    check('openai call 1: content null', () => assert.equal(c1.message.content, null));
    check('openai call 1: tool_calls exact', () => assert.deepEqual(c1.message.tool_calls, [
      { id: 'call_1', type: 'function', function: { name: 'execute_code', arguments: '{"code":"print(2+2)"}' } }]));
    check('openai call 1: arguments parse', () => assert.deepEqual(JSON.parse(c1.message.tool_calls[0].function.arguments), { code: 'print(2+2)' }));
    check('openai call 1: usage', () => assert.deepEqual([r1.usage.prompt_tokens, r1.usage.completion_tokens, r1.usage.total_tokens], [21, 9, 30]));

    messages.push(c1.message); // echoed back verbatim, as the client docs show
    messages.push({ role: 'tool', tool_call_id: c1.message.tool_calls[0].id, content: '4\n' });
    const r2 = await client.chat.completions.create({ model: 'gpt-test', messages, tools: oaTools });
    const c2 = r2.choices[0];
    check('openai call 2: final text', () => assert.equal(c2.message.content, '2+2 is 4.'));
    check('openai call 2: finish_reason stop, no tool_calls', () => assert.deepEqual([c2.finish_reason, c2.message.tool_calls], ['stop', undefined]));
    check('openai call 2: usage', () => assert.deepEqual([r2.usage.prompt_tokens, r2.usage.completion_tokens, r2.usage.total_tokens], [40, 7, 47]));

    const log = await getLog();
    check('openai log: 2 calls on steps 0,1, both replies', () => assert.deepEqual(log.calls.map((c) => [c.step, c.outcome, c.status]), [[0, 'reply', 200], [1, 'reply', 200]]));
    check('openai log: path /v1/chat/completions', () => assert.deepEqual(log.calls.map((c) => c.path), ['/v1/chat/completions', '/v1/chat/completions']));
    check('openai log: no expectation failures', () => assert.deepEqual(log.calls.flatMap((c) => c.expectation_failures), []));
    check('openai log: tool message as sent', () => assert.deepEqual(log.calls[1].body.messages[3], { role: 'tool', tool_call_id: 'call_1', content: '4\n' }));
    check('openai log: auth scheme bearer, header redacted', () => {
      assert.equal(log.calls[0].auth_scheme, 'bearer');
      assert.equal(log.calls[0].headers.authorization, undefined);
      assert.ok(!JSON.stringify(log).includes(OPENAI_KEY));
    });
  });

  // baseURL without /v1: the client then calls /chat/completions, which the server also serves.
  await group('openai baseURL without /v1', async () => {
    await setScript([{ reply: { text: 'root' } }]);
    const r = await oa({ baseURL: url }).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    const log = await getLog();
    check('openai baseURL without /v1 → POST /chat/completions', () => {
      assert.equal(r.choices[0].message.content, 'root');
      assert.equal(log.calls[0].path, '/chat/completions');
    });
  });

  // ---- Anthropic: full tool-calling conversation ----------------------------------------
  await group('anthropic loop', async () => {
    await setScript([
      {
        expect: { protocol: 'anthropic', model: 'claude-test', tools: ['execute_code'], system_contains: 'sandbox',
          last_user_contains: '2+2', message_count: 1, tool_result_count: 0, body_subset: { max_tokens: 1024 } },
        reply: { tool_calls: [{ name: 'execute_code', arguments: { code: 'print(2+2)' } }], usage: { input: 22, output: 11 } },
      },
      {
        expect: { protocol: 'anthropic', last_tool_result_equals: '4\n', last_tool_result_id: 'toolu_1', message_count: 3,
          tool_result_count: 1, last_user_contains: '2+2' },
        reply: { text: '2+2 is 4.', usage: { input: 45, output: 8 } },
      },
    ]);
    const client = an();
    const messages = [{ role: 'user', content: QUESTION }];
    const base = { model: 'claude-test', max_tokens: 1024, system: SYSTEM, tools: anTools };
    const r1 = await client.messages.create({ ...base, messages });
    check('anthropic call 1: type/id/role/model', () => assert.deepEqual([r1.type, r1.id, r1.role, r1.model], ['message', 'msg_1', 'assistant', 'claude-test']));
    check('anthropic call 1: stop_reason tool_use', () => assert.deepEqual([r1.stop_reason, r1.stop_sequence], ['tool_use', null]));
    check('anthropic call 1: content exact', () => assert.deepEqual(r1.content, [
      { type: 'tool_use', id: 'toolu_1', name: 'execute_code', input: { code: 'print(2+2)' }, caller: { type: 'direct' } }]));
    check('anthropic call 1: usage', () => assert.deepEqual([r1.usage.input_tokens, r1.usage.output_tokens], [22, 11]));

    messages.push({ role: 'assistant', content: r1.content });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: r1.content[0].id, content: '4\n' }] });
    const r2 = await client.messages.create({ ...base, messages });
    check('anthropic call 2: final text', () => assert.deepEqual(r2.content, [{ type: 'text', text: '2+2 is 4.', citations: null }]));
    check('anthropic call 2: stop_reason end_turn', () => assert.equal(r2.stop_reason, 'end_turn'));
    check('anthropic call 2: usage', () => assert.deepEqual([r2.usage.input_tokens, r2.usage.output_tokens], [45, 8]));

    const log = await getLog();
    check('anthropic log: 2 calls on steps 0,1, both replies', () => assert.deepEqual(log.calls.map((c) => [c.step, c.outcome, c.status]), [[0, 'reply', 200], [1, 'reply', 200]]));
    check('anthropic log: path /v1/messages', () => assert.deepEqual(log.calls.map((c) => c.path), ['/v1/messages', '/v1/messages']));
    check('anthropic log: no expectation failures', () => assert.deepEqual(log.calls.flatMap((c) => c.expectation_failures), []));
    check('anthropic log: tool_result as sent', () => assert.deepEqual(log.calls[1].body.messages[2],
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '4\n' }] }));
    check('anthropic log: anthropic-version header sent', () => assert.match(log.calls[0].headers['anthropic-version'], /^\d{4}-\d{2}-\d{2}$/));
    check('anthropic log: key redacted', () => {
      assert.equal(log.calls[0].headers['x-api-key'], undefined);
      assert.equal(log.calls[0].headers.authorization, undefined);
      assert.ok(!JSON.stringify(log).includes(ANTHROPIC_KEY));
    });
  });

  // ---- Anthropic: a tool result carrying an image (a chart), as the official client sends it ----
  await group('anthropic tool result with an image', async () => {
    await setScript([
      { reply: { tool_calls: [{ name: 'execute_code', arguments: { code: 'plt.show()' } }] } },
      { expect: { last_tool_result_equals: 'drawn' }, reply: { text: 'A chart.' } },
    ]);
    const client = an();
    const messages = [{ role: 'user', content: 'draw' }];
    const base = { model: 'claude-test', max_tokens: 1024, tools: anTools };
    const r1 = await client.messages.create({ ...base, messages });
    messages.push({ role: 'assistant', content: r1.content });
    const result = { type: 'tool_result', tool_use_id: r1.content[0].id, content: [
      { type: 'text', text: 'drawn' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] };
    messages.push({ role: 'user', content: [result] });
    const r2 = await client.messages.create({ ...base, messages });
    check('image tool result: accepted, final text', () => assert.deepEqual(r2.content, [{ type: 'text', text: 'A chart.', citations: null }]));
    const log = await getLog();
    check('image tool result: body as sent', () => assert.deepEqual(log.calls[1].body.messages[2], { role: 'user', content: [result] }));
    check('image tool result: no expectation failures', () => assert.deepEqual(log.calls.flatMap((c) => c.expectation_failures), []));
    // A media type the API does not take is refused as the API refuses it.
    messages[2] = { role: 'user', content: [{ ...result, content: [{ type: 'image', source: { type: 'base64', media_type: 'image/bmp', data: 'Qk0=' } }] }] };
    await setScript([{ reply: { text: 'never' } }]);
    await rejectsWith('image tool result: bad media type is 400', client.messages.create({ ...base, messages }), Anthropic.BadRequestError);
  });

  // ---- 429 with Retry-After, then a reply: the client's own retry succeeds -------------
  await group('openai 429 retry', async () => {
    await setScript([{ fault: { status: 429, retry_after: 1 } }, { reply: { text: 'after retry' } }]);
    const t0 = Date.now();
    const r = await oa({ maxRetries: 2 }).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    const ms = Date.now() - t0;
    const log = await getLog();
    check('openai 429: retried reply text', () => assert.equal(r.choices[0].message.content, 'after retry'));
    check('openai 429: 2 calls (429 then 200)', () => assert.deepEqual(log.calls.map((c) => [c.outcome, c.status]), [['fault', 429], ['reply', 200]]));
    check('openai 429: client honoured Retry-After', () => assert.ok(ms >= 900, `retried after ${ms} ms`));
    check('openai 429: retry count header 1', () => assert.equal(log.calls[1].headers['x-stainless-retry-count'], '1'));
  });
  await group('anthropic 429 retry', async () => {
    await setScript([{ fault: { status: 429, retry_after: 1 } }, { reply: { text: 'after retry' } }]);
    const t0 = Date.now();
    const r = await an({ maxRetries: 2 }).messages.create({ model: 'm', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });
    const ms = Date.now() - t0;
    const log = await getLog();
    check('anthropic 429: retried reply text', () => assert.equal(r.content[0].text, 'after retry'));
    check('anthropic 429: 2 calls (429 then 200)', () => assert.deepEqual(log.calls.map((c) => [c.outcome, c.status]), [['fault', 429], ['reply', 200]]));
    check('anthropic 429: client honoured Retry-After', () => assert.ok(ms >= 900, `retried after ${ms} ms`));
    check('anthropic 429: retry count header 1', () => assert.equal(log.calls[1].headers['x-stainless-retry-count'], '1'));
  });

  // ---- wrong key → AuthenticationError ------------------------------------------------
  await group('401', async () => {
    await setScript([{ reply: { text: 'unused' } }]);
    await rejectsWith('openai wrong key → AuthenticationError',
      oa({ apiKey: WRONG_KEY }).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      OpenAI.AuthenticationError, (e) => assert.deepEqual([e.status, e.type, e.code], [401, 'invalid_request_error', 'invalid_api_key']));
    await rejectsWith('anthropic wrong key → AuthenticationError',
      an({ apiKey: WRONG_KEY }).messages.create({ model: 'm', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
      Anthropic.AuthenticationError, (e) => {
        assert.equal(e.status, 401);
        assert.equal(e.error.type, 'error');
        assert.equal(e.error.error.type, 'authentication_error');
      });
    const log = await getLog();
    check('401: no step consumed, outcome auth_failed', () => assert.deepEqual([log.next_step, ...log.calls.map((c) => c.outcome)], [0, 'auth_failed', 'auth_failed']));
    check('401: wrong key never logged', () => assert.ok(!JSON.stringify(log).includes(WRONG_KEY)));
  });

  // ---- malformed conversation (tool result with the wrong id) → 400 → BadRequestError ----
  await group('malformed', async () => {
    await setScript([{ reply: { text: 'unused' } }]);
    await rejectsWith('openai wrong tool_call_id → BadRequestError',
      oa().chat.completions.create({ model: 'm', tools: oaTools, messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'execute_code', arguments: '{"code":"1"}' } }] },
        { role: 'tool', tool_call_id: 'call_999', content: '1' },
      ] }),
      OpenAI.BadRequestError, (e) => {
        assert.equal(e.status, 400);
        assert.equal(e.type, 'invalid_request_error');
        assert.match(e.message, /call_999/);
      });
    await rejectsWith('anthropic wrong tool_use_id → BadRequestError',
      an().messages.create({ model: 'm', max_tokens: 16, tools: anTools, messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'execute_code', input: { code: '1' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_999', content: '1' }] },
      ] }),
      Anthropic.BadRequestError, (e) => {
        assert.equal(e.status, 400);
        assert.equal(e.error.error.type, 'invalid_request_error');
        assert.match(e.message, /toolu_999/);
      });
    await rejectsWith('anthropic missing max_tokens → BadRequestError',
      an().messages.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      Anthropic.BadRequestError, (e) => assert.match(e.message, /max_tokens: Field required/));
    const log = await getLog();
    check('malformed: no step consumed, outcome invalid_request', () =>
      assert.deepEqual([log.next_step, ...log.calls.map((c) => [c.outcome, c.step])], [0, ['invalid_request', null], ['invalid_request', null], ['invalid_request', null]]));
  });

  // ---- a failed expectation → 400 naming the step and the check, and logged ------------
  await group('expectation failure', async () => {
    await setScript([{ expect: { last_user_contains: 'banana' }, reply: { text: 'unused' } }]);
    await rejectsWith('failed expectation → BadRequestError naming step and check',
      oa().chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'apple' }] }),
      OpenAI.BadRequestError, (e) => assert.match(e.message, /step 0: expectation failed: last_user_contains/));
    const log = await getLog();
    check('failed expectation logged', () => assert.deepEqual([log.calls[0].outcome, log.calls[0].expectation_failures.map((f) => f.check)],
      ['expect_failed', ['last_user_contains']]));
  });

  // ---- script exhausted → 500, marked not retryable ------------------------------------
  await group('exhausted', async () => {
    await setScript([]);
    await rejectsWith('exhausted script → InternalServerError',
      an({ maxRetries: 2 }).messages.create({ model: 'm', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
      Anthropic.InternalServerError, (e) => assert.match(e.message, /script exhausted/));
    const log = await getLog();
    check('exhausted: one call, no client retry', () => assert.deepEqual(log.calls.map((c) => [c.outcome, c.status]), [['script_exhausted', 500]]));
  });

  // ---- reset and stall faults -----------------------------------------------------------
  await group('reset fault', async () => {
    await setScript([{ fault: { reset: true } }]);
    await rejectsWith('reset fault → APIConnectionError',
      oa().chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }), OpenAI.APIConnectionError);
  });
  await group('stall fault', async () => {
    await setScript([{ fault: { stall_ms: 5000 } }]);
    await rejectsWith('stall fault + client timeout → APIConnectionTimeoutError',
      oa({ timeout: 300 }).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      OpenAI.APIConnectionTimeoutError);
    await new Promise((r) => setTimeout(r, 50));
    const log = await getLog();
    check('stall: client abort recorded', () => assert.deepEqual([log.calls[0].outcome, log.calls[0].client_aborted], ['fault', true]));
  });

  // ---- untrusted input: bad JSON, oversize body ----------------------------------------
  await group('raw input', async () => {
    const post = (p, body, headers) => fetch(url + p, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
    const r1 = await post('/v1/chat/completions', '{"model":', { authorization: `Bearer ${OPENAI_KEY}` });
    const j1 = await r1.json();
    check('bad JSON → 400 OpenAI error body', () => assert.deepEqual([r1.status, Object.keys(j1.error).sort(), j1.error.type],
      [400, ['code', 'message', 'param', 'type'], 'invalid_request_error']));
    const r2 = await post('/v1/messages', 'x'.repeat(16 * 1024 * 1024 + 1), { 'x-api-key': ANTHROPIC_KEY, 'anthropic-version': '2023-06-01' });
    const j2 = await r2.json();
    check('oversize body → 413 Anthropic error body', () => assert.deepEqual([r2.status, j2.type, j2.error.type], [413, 'error', 'request_too_large']));
  });

  // ---- stdin EOF ends the server ------------------------------------------------------
  await group('stdin EOF', async () => {
    const exited = once(child, 'exit');
    child.stdin.end();
    const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
    const [code] = await exited;
    clearTimeout(timer);
    check('server exits 0 on stdin EOF', () => assert.equal(code, 0));
  });
} finally {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  clearTimeout(watchdog);
}

console.log(`lm conformance: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
