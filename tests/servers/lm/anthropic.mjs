// Anthropic Messages API: authentication, request validation, response rendering.
// Field names follow the official `@anthropic-ai/sdk` types (resources/messages, resources/shared).
import { RequestError, isObject, isString, typeName, textOf } from './util.mjs';

export const name = 'anthropic';

// API versions this server answers. 2023-06-01 is the long-standing one most HTTP clients
// send; 2026-10-21 is what @anthropic-ai/sdk 1.x sends. An unknown version is a 400, as
// on the real service, so a typo in a client's header does not go unnoticed.
export const VERSIONS = new Set(['2023-01-01', '2023-06-01', '2026-10-21']);

// MessageCreateParams top-level fields; the real service rejects others with
// "Extra inputs are not permitted". temperature/top_k/top_p are deprecated in the newest
// version's types but still accepted, since older clients send them.
const TOP_LEVEL = new Set([
  'max_tokens', 'messages', 'model', 'cache_control', 'container', 'diagnostics', 'inference_geo', 'metadata',
  'output_config', 'service_tier', 'speed', 'stop_sequences', 'stream', 'system', 'thinking', 'tool_choice', 'tools',
  'user_profile_id', 'workspace_id', 'temperature', 'top_k', 'top_p',
]);
const CUSTOM_TOOL_KEYS = new Set([
  'input_schema', 'name', 'allowed_callers', 'cache_control', 'defer_loading', 'description',
  'eager_input_streaming', 'input_examples', 'strict', 'type',
]);
// Content block types a request may carry; only the ones a tool loop uses are checked in depth.
const BLOCK_TYPES = new Set([
  'text', 'image', 'document', 'search_result', 'thinking', 'redacted_thinking', 'tool_use', 'tool_result',
  'server_tool_use', 'web_search_tool_result', 'web_fetch_tool_result', 'code_execution_tool_result',
  'bash_code_execution_tool_result', 'text_editor_code_execution_tool_result', 'tool_search_tool_result',
  'container_upload',
]);
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/;
const TOOL_USE_ID = /^[a-zA-Z0-9_-]+$/;

const bad = (message) => new RequestError(400, message, { type: 'invalid_request_error' });

export function errorBody(message, type = 'invalid_request_error', requestId = null) {
  return { type: 'error', error: { type, message }, request_id: requestId };
}

export function errorResponse(err, requestId) {
  return { status: err.status, body: errorBody(err.message, err.extra.type ?? 'invalid_request_error', requestId) };
}

// The service takes the key in `x-api-key`; @anthropic-ai/sdk 1.x sends it as
// `Authorization: Bearer <key>`, which the service also accepts. Then `anthropic-version`.
export function authenticate(headers, expectedKey, requestId) {
  let key = headers['x-api-key'];
  if (!isString(key) && isString(headers['authorization']) && /^Bearer\s+\S/i.test(headers['authorization'])) {
    key = headers['authorization'].replace(/^Bearer\s+/i, '').trim();
  }
  if (!isString(key) || key === '') {
    return { status: 401, body: errorBody('x-api-key header is required', 'authentication_error', requestId) };
  }
  if (key !== expectedKey) {
    return { status: 401, body: errorBody('invalid x-api-key', 'authentication_error', requestId) };
  }
  const version = headers['anthropic-version'];
  if (!isString(version) || version === '') {
    return { status: 400, body: errorBody('anthropic-version: header is required', 'invalid_request_error', requestId) };
  }
  if (!VERSIONS.has(version)) {
    return {
      status: 400,
      body: errorBody(`anthropic-version: '${version.slice(0, 40)}' is not a valid version`, 'invalid_request_error', requestId),
    };
  }
  return null;
}

function checkTextBlocks(blocks, where) {
  blocks.forEach((b, k) => {
    const p = `${where}.${k}`;
    if (!isObject(b)) throw bad(`${p}: Input should be a valid dictionary or object`);
    if (b.type !== 'text') throw bad(`${p}.type: Input should be 'text'`);
    if (!isString(b.text)) throw bad(`${p}.text: Field required`);
    if (b.text === '') throw bad(`${p}: text content blocks must be non-empty`);
  });
}

function checkTools(tools) {
  if (!Array.isArray(tools)) throw bad('tools: Input should be a valid list');
  const names = [];
  tools.forEach((t, i) => {
    const p = `tools.${i}`;
    if (!isObject(t)) throw bad(`${p}: Input should be a valid dictionary or object`);
    // Server tools (bash_20250124, web_search_…) carry a versioned `type`; accept them as declared.
    if (t.type !== undefined && t.type !== null && t.type !== 'custom') {
      if (!isString(t.type) || !isString(t.name)) throw bad(`${p}: Input tag '${String(t.type)}' is not a known tool type`);
      names.push(t.name);
      return;
    }
    for (const k of Object.keys(t)) if (!CUSTOM_TOOL_KEYS.has(k)) throw bad(`${p}.custom.${k}: Extra inputs are not permitted`);
    if (!isString(t.name)) throw bad(`${p}.custom.name: Field required`);
    if (!TOOL_NAME.test(t.name)) throw bad(`${p}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`);
    if (t.description !== undefined && !isString(t.description)) throw bad(`${p}.custom.description: Input should be a valid string`);
    if (t.input_schema === undefined) throw bad(`${p}.custom.input_schema: Field required`);
    if (!isObject(t.input_schema)) throw bad(`${p}.custom.input_schema: Input should be a valid dictionary`);
    if (t.input_schema.type !== 'object') throw bad(`${p}.custom.input_schema.type: Input should be 'object'`);
    const { properties, required } = t.input_schema;
    if (properties !== undefined && properties !== null && !isObject(properties)) {
      throw bad(`${p}.custom.input_schema.properties: Input should be a valid dictionary`);
    }
    if (required !== undefined && required !== null && (!Array.isArray(required) || !required.every(isString))) {
      throw bad(`${p}.custom.input_schema.required: Input should be a valid list of strings`);
    }
    names.push(t.name);
  });
  if (new Set(names).size !== names.length) throw bad('tools: Tool names must be unique.');
  return names;
}

function checkToolChoice(choice, toolNames) {
  if (!isObject(choice)) throw bad('tool_choice: Input should be a valid dictionary or object');
  if (!['auto', 'any', 'tool', 'none'].includes(choice.type)) {
    throw bad(`tool_choice: Input tag '${String(choice.type)}' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'`);
  }
  if (choice.type === 'tool') {
    if (!isString(choice.name)) throw bad('tool_choice.tool.name: Field required');
    if (!(toolNames ?? []).includes(choice.name)) throw bad(`tool_choice: Tool '${choice.name}' not found in tools`);
  }
  if (choice.disable_parallel_tool_use !== undefined && typeof choice.disable_parallel_tool_use !== 'boolean') {
    throw bad(`tool_choice.${choice.type}.disable_parallel_tool_use: Input should be a valid boolean`);
  }
}

// Validates a Messages request the way the service does for what a tool loop uses: message
// roles and content blocks, tool definitions, and the tool_use → tool_result pairing between
// an assistant turn and the user turn right after it.
export function validate(body) {
  if (!isObject(body)) throw bad('Input should be a valid dictionary or object');
  for (const k of Object.keys(body)) if (!TOP_LEVEL.has(k)) throw bad(`${k}: Extra inputs are not permitted`);
  if (body.model === undefined) throw bad('model: Field required');
  if (!isString(body.model) || body.model === '') throw bad('model: Input should be a valid string');
  if (body.max_tokens === undefined) throw bad('max_tokens: Field required');
  if (!Number.isInteger(body.max_tokens)) throw bad('max_tokens: Input should be a valid integer');
  if (body.max_tokens < 0) throw bad('max_tokens: Input should be greater than or equal to 0');
  if (body.messages === undefined) throw bad('messages: Field required');
  if (!Array.isArray(body.messages)) throw bad('messages: Input should be a valid list');
  if (body.messages.length === 0) throw bad('messages: at least one message is required');
  if (body.stream === true) throw bad('stream: this test server answers non-streaming requests only');
  if (body.system !== undefined && body.system !== null) {
    if (Array.isArray(body.system)) checkTextBlocks(body.system, 'system');
    else if (!isString(body.system)) throw bad('system: Input should be a valid string or a list of text blocks');
  }
  const toolNames = body.tools === undefined || body.tools === null ? null : checkTools(body.tools);
  if (body.tool_choice !== undefined && body.tool_choice !== null) checkToolChoice(body.tool_choice, toolNames);

  const seenToolUse = new Set();
  let usesTools = false;
  let prevToolUses = null; // tool_use ids of the previous message (an assistant turn), or null
  const last = body.messages.length - 1;
  body.messages.forEach((m, i) => {
    const p = `messages.${i}`;
    if (!isObject(m)) throw bad(`${p}: Input should be a valid dictionary or object`);
    for (const k of Object.keys(m)) if (k !== 'role' && k !== 'content') throw bad(`${p}.${k}: Extra inputs are not permitted`);
    if (!['user', 'assistant', 'system'].includes(m.role)) {
      throw bad(`${p}.role: Input should be 'user', 'assistant' or 'system'`);
    }
    if (m.content === undefined) throw bad(`${p}.content: Field required`);
    const finalAssistant = m.role === 'assistant' && i === last;
    let blocks;
    if (isString(m.content)) {
      if (m.content === '' && !finalAssistant) {
        throw bad(`${p}: all messages must have non-empty content except for the optional final assistant message`);
      }
      blocks = [];
    } else if (Array.isArray(m.content)) {
      if (m.content.length === 0 && !finalAssistant) {
        throw bad(`${p}: all messages must have non-empty content except for the optional final assistant message`);
      }
      blocks = m.content;
    } else {
      throw bad(`${p}.content: Input should be a valid string or a list of content blocks`);
    }
    if (m.role === 'system') {
      checkTextBlocks(blocks, `${p}.content`);
    }

    const toolUses = [];
    const results = [];
    let sawOther = false;
    blocks.forEach((b, k) => {
      const q = `${p}.content.${k}`;
      if (!isObject(b)) throw bad(`${q}: Input should be a valid dictionary or object`);
      if (!BLOCK_TYPES.has(b.type)) {
        throw bad(`${q}: Input tag '${String(b.type)}' found using 'type' does not match any of the expected tags: ${
          [...BLOCK_TYPES].map((t) => `'${t}'`).join(', ')}`);
      }
      switch (b.type) {
        case 'text':
          if (!isString(b.text)) throw bad(`${q}.text.text: Field required`);
          if (b.text === '') throw bad(`${p}: text content blocks must be non-empty`);
          sawOther = true;
          break;
        case 'tool_use':
          if (m.role !== 'assistant') throw bad(`${q}: \`tool_use\` blocks can only be in \`assistant\` messages`);
          if (!isString(b.id)) throw bad(`${q}.tool_use.id: Field required`);
          if (!TOOL_USE_ID.test(b.id)) throw bad(`${q}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'`);
          if (!isString(b.name)) throw bad(`${q}.tool_use.name: Field required`);
          if (!isObject(b.input)) throw bad(`${q}.tool_use.input: Input should be a valid dictionary`);
          if (seenToolUse.has(b.id)) throw bad(`${q}: \`tool_use\` ids must be unique`);
          seenToolUse.add(b.id);
          toolUses.push(b.id);
          usesTools = true;
          break;
        case 'tool_result': {
          if (m.role !== 'user') throw bad(`${q}: \`tool_result\` blocks can only be in \`user\` messages`);
          if (!isString(b.tool_use_id)) throw bad(`${q}.tool_result.tool_use_id: Field required`);
          if (b.is_error !== undefined && typeof b.is_error !== 'boolean') {
            throw bad(`${q}.tool_result.is_error: Input should be a valid boolean`);
          }
          if (b.content !== undefined && !isString(b.content)) {
            if (!Array.isArray(b.content)) throw bad(`${q}.tool_result.content: Input should be a valid string or list`);
            b.content.forEach((c, j) => {
              if (!isObject(c) || !isString(c.type)) throw bad(`${q}.tool_result.content.${j}: Input should be a valid dictionary`);
              if (c.type === 'text') {
                if (!isString(c.text)) throw bad(`${q}.tool_result.content.${j}.text: Field required`);
                if (c.text === '') throw bad(`${p}: text content blocks must be non-empty`);
              } else if (c.type === 'image') {
                // An image block's source: base64 data of one of the four accepted media types.
                const src = c.source;
                const r = `${q}.tool_result.content.${j}.image.source`;
                if (!isObject(src)) throw bad(`${r}: Field required`);
                if (src.type !== 'base64') throw bad(`${r}.type: Input should be 'base64'`);
                if (!['image/jpeg', 'image/png', 'image/gif', 'image/webp'].includes(src.media_type)) {
                  throw bad(`${r}.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`);
                }
                if (!isString(src.data) || !/^[A-Za-z0-9+/]*={0,2}$/.test(src.data) || src.data.length % 4 !== 0) {
                  throw bad(`${r}.base64.data: Input should be valid base64`);
                }
              } else {
                throw bad(`${q}.tool_result.content.${j}: Input tag '${c.type}' found using 'type' does not match any of the expected tags: 'text', 'image'`);
              }
            });
          }
          // The docs require tool results to lead the user turn; text may only follow them.
          if (sawOther) throw bad(`${q}: \`tool_result\` blocks must come first in the user message content, before any other blocks`);
          results.push({ id: b.tool_use_id, k });
          usesTools = true;
          break;
        }
        default:
          sawOther = true;
      }
    });

    if (results.length) {
      const allowed = new Set(prevToolUses ?? []);
      if (!prevToolUses || prevToolUses.length === 0) {
        throw bad(`${p}: \`tool_result\` block(s) provided when previous message does not contain any \`tool_use\` blocks`);
      }
      const answered = new Set();
      for (const r of results) {
        if (!allowed.has(r.id)) {
          throw bad(`${p}.content.${r.k}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${r.id}. ` +
            'Each `tool_result` block must have a corresponding `tool_use` block in the previous message.');
        }
        if (answered.has(r.id)) throw bad(`${p}.content.${r.k}: duplicate \`tool_result\` for \`tool_use_id\` ${r.id}`);
        answered.add(r.id);
      }
    }
    if (prevToolUses && prevToolUses.length) {
      const answered = new Set(m.role === 'user' ? results.map((r) => r.id) : []);
      const missing = prevToolUses.filter((id) => !answered.has(id));
      if (missing.length) {
        throw bad(`messages.${i - 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. ` +
          'Each `tool_use` block must have a corresponding `tool_result` block in the next message.');
      }
    }
    prevToolUses = m.role === 'assistant' ? toolUses : null;
  });
  if (prevToolUses && prevToolUses.length) {
    throw bad(`messages.${last}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${prevToolUses.join(', ')}. ` +
      'Each `tool_use` block must have a corresponding `tool_result` block in the next message.');
  }
  if (usesTools && toolNames === null) throw bad('Requests which include `tool_use` or `tool_result` blocks must define tools.');
}

// Text of a tool_result's content (a string or text blocks).
const resultText = (b) => textOf(b.content ?? '');

export function summarize(body) {
  const msgs = body.messages;
  const systemParts = [];
  if (isString(body.system)) systemParts.push(body.system);
  else if (Array.isArray(body.system)) systemParts.push(textOf(body.system));
  let lastUser = null;
  let lastTool = null;
  let toolResults = 0;
  for (const m of msgs) {
    if (m.role === 'system') systemParts.push(textOf(m.content));
    if (m.role !== 'user') continue;
    // "last user text" skips turns that carry only tool results, as those are not the user speaking.
    const text = textOf(m.content);
    if (isString(m.content) || m.content.some((b) => b.type === 'text')) lastUser = text;
    if (Array.isArray(m.content)) {
      for (const b of m.content) {
        if (b.type === 'tool_result') {
          toolResults += 1;
          lastTool = { id: b.tool_use_id, text: resultText(b), is_error: b.is_error === true };
        }
      }
    }
  }
  const tools = (body.tools ?? []).map((t) => t.name);
  return { model: body.model, system: systemParts.join('\n'), lastUser, lastTool, toolResults, messageCount: msgs.length, tools };
}

export function render(reply, ctx) {
  const content = [];
  if (reply.text !== undefined && reply.text !== null) content.push({ type: 'text', text: reply.text, citations: null });
  for (const c of reply.tool_calls ?? []) {
    let input = c.arguments ?? {};
    if (isString(input)) {
      // The Messages API has no raw-string form for tool input; a script that needs it is wrong.
      try { input = JSON.parse(input); } catch { throw new Error('tool call arguments given as a string must be valid JSON for anthropic'); }
    }
    if (!isObject(input)) throw new Error('tool call arguments must be a JSON object for anthropic');
    content.push({ type: 'tool_use', id: c.id ?? ctx.nextId('toolu_'), name: c.name, input, caller: { type: 'direct' } });
  }
  if (content.length === 0) content.push({ type: 'text', text: '', citations: null });
  const hasTools = (reply.tool_calls ?? []).length > 0;
  return {
    id: `msg_${ctx.callNumber}`,
    type: 'message',
    role: 'assistant',
    model: ctx.model,
    content,
    stop_reason: reply.stop_reason ?? (hasTools ? 'tool_use' : 'end_turn'),
    stop_sequence: null,
    stop_details: null,
    container: null,
    diagnostics: null,
    usage: {
      input_tokens: reply.usage?.input ?? 10,
      output_tokens: reply.usage?.output ?? 5,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
      inference_geo: null,
      output_tokens_details: null,
      server_tool_use: null,
      service_tier: 'standard',
      speed: null,
    },
  };
}

export function faultBody(status, requestId) {
  const map = {
    400: ['invalid_request_error', 'Bad request (scripted fault).'],
    401: ['authentication_error', 'invalid x-api-key'],
    403: ['permission_error', 'Your API key does not have permission to use the specified resource.'],
    404: ['not_found_error', 'The requested resource could not be found.'],
    413: ['request_too_large', 'Request exceeds the maximum allowed number of bytes.'],
    429: ['rate_limit_error', 'Number of requests has exceeded your rate limit. Please try again later.'],
    500: ['api_error', 'Internal server error'],
    504: ['timeout_error', 'Request timed out'],
    529: ['overloaded_error', 'Overloaded'],
  };
  const [type, message] = map[status] ?? (status >= 500 ? ['api_error', 'Internal server error'] : ['invalid_request_error', `Scripted fault ${status}.`]);
  return errorBody(message, type, requestId);
}

export const requestIdHeader = 'request-id';
