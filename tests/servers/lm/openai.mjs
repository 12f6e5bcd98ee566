// OpenAI Chat Completions: authentication, request validation, response rendering.
// Field names follow the official `openai` package's types (resources/chat/completions).
import { RequestError, isObject, isString, typeName, textOf } from './util.mjs';

export const name = 'openai';

// Top-level parameters of ChatCompletionCreateParams. The real service rejects anything
// else with "Unrecognized request argument supplied", which catches misspelt fields.
const TOP_LEVEL = new Set([
  'messages', 'model', 'audio', 'frequency_penalty', 'function_call', 'functions', 'logit_bias', 'logprobs',
  'max_completion_tokens', 'max_tokens', 'metadata', 'modalities', 'moderation', 'n', 'parallel_tool_calls',
  'prediction', 'presence_penalty', 'prompt_cache_key', 'prompt_cache_options', 'prompt_cache_retention',
  'reasoning_effort', 'response_format', 'safety_identifier', 'seed', 'service_tier', 'stop', 'store', 'stream',
  'stream_options', 'temperature', 'tool_choice', 'tools', 'top_logprobs', 'top_p', 'user', 'verbosity',
  'web_search_options',
]);

// Allowed keys per message role (ChatCompletion*MessageParam).
const MESSAGE_KEYS = {
  developer: new Set(['role', 'content', 'name']),
  system: new Set(['role', 'content', 'name']),
  user: new Set(['role', 'content', 'name']),
  // `annotations` is not a request field, but clients echo a returned message back verbatim
  // (the documented pattern), and the service tolerates it.
  assistant: new Set(['role', 'content', 'name', 'tool_calls', 'refusal', 'audio', 'function_call', 'annotations']),
  tool: new Set(['role', 'content', 'tool_call_id']),
  function: new Set(['role', 'content', 'name']),
};
const USER_PART_TYPES = new Set(['text', 'image_url', 'input_audio', 'file']);
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

const bad = (message, param = null, code = null) => new RequestError(400, message, { param, code });

export function errorBody(message, type = 'invalid_request_error', param = null, code = null) {
  return { error: { message, type, param, code } };
}

export function errorResponse(err) {
  return {
    status: err.status,
    body: errorBody(err.message, err.extra.type ?? 'invalid_request_error', err.extra.param ?? null,
      err.extra.code ?? null),
  };
}

// `Authorization: Bearer <key>` is the only scheme the service accepts.
export function authenticate(headers, expectedKey) {
  const auth = headers['authorization'];
  if (!isString(auth) || !/^Bearer\s+\S/i.test(auth)) {
    return {
      status: 401,
      body: errorBody("You didn't provide an API key. You need to provide your API key in an Authorization header " +
        'using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).', 'invalid_request_error', null, 'invalid_api_key'),
    };
  }
  const key = auth.replace(/^Bearer\s+/i, '').trim();
  if (key !== expectedKey) {
    // The real message echoes a masked key; we echo nothing so no key can reach a log.
    return {
      status: 401,
      body: errorBody('Incorrect API key provided.', 'invalid_request_error', null, 'invalid_api_key'),
    };
  }
  return null;
}

function checkContent(content, where, allowedTypes, required = true) {
  if (content === undefined || content === null) {
    if (required) throw bad(`Invalid value for 'content': expected a string, got ${typeName(content)}.`, `${where}.content`);
    return;
  }
  if (isString(content)) return;
  if (!Array.isArray(content)) {
    throw bad(`Invalid type for '${where}.content': expected one of a string or array of objects, but got ${typeName(content)} instead.`,
      `${where}.content`, 'invalid_type');
  }
  if (content.length === 0) {
    throw bad(`Invalid '${where}.content': empty array. Expected an array with minimum length 1, but got an empty array instead.`,
      `${where}.content`, 'empty_array');
  }
  content.forEach((part, k) => {
    const p = `${where}.content[${k}]`;
    if (!isObject(part)) throw bad(`Invalid type for '${p}': expected an object, but got ${typeName(part)} instead.`, p, 'invalid_type');
    if (!allowedTypes.has(part.type)) {
      throw bad(`Invalid value: '${String(part.type)}'. Supported values are: ${[...allowedTypes].map((t) => `'${t}'`).join(', ')}.`,
        `${p}.type`, 'invalid_value');
    }
    if (part.type === 'text' && !isString(part.text)) {
      throw bad(`Missing required parameter: '${p}.text'.`, `${p}.text`, 'missing_required_parameter');
    }
    if (part.type === 'refusal' && !isString(part.refusal)) {
      throw bad(`Missing required parameter: '${p}.refusal'.`, `${p}.refusal`, 'missing_required_parameter');
    }
  });
}

function checkTools(tools) {
  if (!Array.isArray(tools)) {
    throw bad(`Invalid type for 'tools': expected an array, but got ${typeName(tools)} instead.`, 'tools', 'invalid_type');
  }
  if (tools.length === 0) {
    throw bad("Invalid 'tools': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      'tools', 'empty_array');
  }
  const names = [];
  tools.forEach((t, i) => {
    const p = `tools[${i}]`;
    if (!isObject(t)) throw bad(`Invalid type for '${p}': expected an object, but got ${typeName(t)} instead.`, p, 'invalid_type');
    if (t.type === 'custom') {
      if (!isObject(t.custom) || !isString(t.custom.name)) {
        throw bad(`Missing required parameter: '${p}.custom.name'.`, `${p}.custom.name`, 'missing_required_parameter');
      }
      names.push(t.custom.name);
      return;
    }
    if (t.type !== 'function') {
      throw bad(`Invalid value: '${String(t.type)}'. Supported values are: 'function' and 'custom'.`, `${p}.type`, 'invalid_value');
    }
    const f = t.function;
    if (!isObject(f)) throw bad(`Missing required parameter: '${p}.function'.`, `${p}.function`, 'missing_required_parameter');
    for (const k of Object.keys(f)) {
      if (!['name', 'description', 'parameters', 'strict'].includes(k)) {
        throw bad(`Unrecognized request argument supplied: ${p}.function.${k}`, `${p}.function.${k}`, 'unknown_parameter');
      }
    }
    if (!isString(f.name)) throw bad(`Missing required parameter: '${p}.function.name'.`, `${p}.function.name`, 'missing_required_parameter');
    if (!TOOL_NAME.test(f.name)) {
      throw bad(`Invalid '${p}.function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
        `${p}.function.name`, 'invalid_value');
    }
    if (f.description !== undefined && !isString(f.description)) {
      throw bad(`Invalid type for '${p}.function.description': expected a string, but got ${typeName(f.description)} instead.`,
        `${p}.function.description`, 'invalid_type');
    }
    if (f.parameters !== undefined) {
      if (!isObject(f.parameters) || f.parameters.type !== 'object') {
        throw bad(`Invalid schema for function '${f.name}': schema must be a JSON Schema of 'type: "object"', got 'type: "${
          isObject(f.parameters) ? String(f.parameters.type) : typeName(f.parameters)}"'.`, `${p}.function.parameters`,
        'invalid_function_parameters');
      }
      const { properties, required } = f.parameters;
      if (properties !== undefined && !isObject(properties)) {
        throw bad(`Invalid schema for function '${f.name}': 'properties' must be an object.`, `${p}.function.parameters`,
          'invalid_function_parameters');
      }
      if (required !== undefined && (!Array.isArray(required) || !required.every(isString))) {
        throw bad(`Invalid schema for function '${f.name}': 'required' must be an array of strings.`,
          `${p}.function.parameters`, 'invalid_function_parameters');
      }
    }
    if (f.strict !== undefined && f.strict !== null && typeof f.strict !== 'boolean') {
      throw bad(`Invalid type for '${p}.function.strict': expected a boolean.`, `${p}.function.strict`, 'invalid_type');
    }
    names.push(f.name);
  });
  return names;
}

function checkToolChoice(choice, toolNames) {
  if (toolNames === null) {
    throw bad("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", 'tool_choice');
  }
  if (isString(choice)) {
    if (!['none', 'auto', 'required'].includes(choice)) {
      throw bad(`Invalid value: '${choice}'. Supported values are: 'none', 'auto', and 'required'.`, 'tool_choice', 'invalid_value');
    }
    return;
  }
  if (isObject(choice) && choice.type === 'function') {
    if (!isObject(choice.function) || !isString(choice.function.name)) {
      throw bad("Missing required parameter: 'tool_choice.function.name'.", 'tool_choice.function.name', 'missing_required_parameter');
    }
    if (!toolNames.includes(choice.function.name)) {
      throw bad(`Invalid value for 'tool_choice': function '${choice.function.name}' is not among the tools.`, 'tool_choice');
    }
    return;
  }
  if (isObject(choice) && ['allowed_tools', 'custom'].includes(choice.type)) return;
  throw bad("Invalid value for 'tool_choice'.", 'tool_choice', 'invalid_value');
}

// Validates the parts of a chat completion request that a tool-calling loop uses, the way the
// service does: message shapes per role, tool definitions, and the pairing of every assistant
// tool call with exactly one following `tool` message.
export function validate(body) {
  if (!isObject(body)) throw bad('The request body must be a JSON object.');
  for (const k of Object.keys(body)) {
    if (!TOP_LEVEL.has(k)) throw bad(`Unrecognized request argument supplied: ${k}`, k, 'unknown_parameter');
  }
  if (!isString(body.model) || body.model === '') throw bad('you must provide a model parameter');
  if (body.messages === undefined) throw bad("Missing required parameter: 'messages'.", 'messages', 'missing_required_parameter');
  if (!Array.isArray(body.messages)) {
    throw bad(`Invalid type for 'messages': expected an array, but got ${typeName(body.messages)} instead.`, 'messages', 'invalid_type');
  }
  if (body.messages.length === 0) {
    throw bad("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      'messages', 'empty_array');
  }
  if (body.stream === true) {
    throw bad('This test server answers non-streaming requests only; stream must be false or absent.', 'stream', 'unsupported_value');
  }
  if (body.n !== undefined && body.n !== null && body.n !== 1) {
    throw bad('This test server renders a single choice; n must be 1 or absent.', 'n', 'unsupported_value');
  }
  const toolNames = body.tools === undefined || body.tools === null ? null : checkTools(body.tools);
  if (body.tool_choice !== undefined && body.tool_choice !== null) checkToolChoice(body.tool_choice, toolNames);

  // Open tool calls: ids of the latest assistant tool_calls still waiting for a `tool` message.
  let pending = null; // { index, ids: Set, answered: Set }
  const closePending = (i) => {
    const missing = [...pending.ids].filter((id) => !pending.answered.has(id));
    if (missing.length) {
      throw bad("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. " +
        `The following tool_call_ids did not have response messages: ${missing.join(', ')}`, `messages.[${i}].role`);
    }
    pending = null;
  };

  body.messages.forEach((m, i) => {
    const p = `messages[${i}]`;
    if (!isObject(m)) throw bad(`Invalid type for '${p}': expected an object, but got ${typeName(m)} instead.`, p, 'invalid_type');
    const keys = MESSAGE_KEYS[m.role];
    if (!keys) {
      throw bad(`Invalid value: '${String(m.role)}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`,
        `${p}.role`, 'invalid_value');
    }
    for (const k of Object.keys(m)) {
      if (!keys.has(k)) throw bad(`Additional properties are not allowed ('${k}' was unexpected) - '${p}'`, `${p}.${k}`);
    }
    if (m.name !== undefined && !isString(m.name)) {
      throw bad(`Invalid type for '${p}.name': expected a string, but got ${typeName(m.name)} instead.`, `${p}.name`, 'invalid_type');
    }
    if (m.role !== 'tool' && pending) closePending(i);

    switch (m.role) {
      case 'system':
      case 'developer':
        checkContent(m.content, p, new Set(['text']));
        break;
      case 'user':
        checkContent(m.content, p, USER_PART_TYPES);
        break;
      case 'function':
        if (!isString(m.name)) throw bad(`Missing required parameter: '${p}.name'.`, `${p}.name`, 'missing_required_parameter');
        if (!isString(m.content) && m.content !== null) {
          throw bad(`Invalid type for '${p}.content': expected a string.`, `${p}.content`, 'invalid_type');
        }
        break;
      case 'assistant': {
        const hasCalls = m.tool_calls !== undefined && m.tool_calls !== null;
        checkContent(m.content, p, new Set(['text', 'refusal']), !hasCalls && !m.function_call);
        if (!hasCalls) break;
        if (!Array.isArray(m.tool_calls)) {
          throw bad(`Invalid type for '${p}.tool_calls': expected an array, but got ${typeName(m.tool_calls)} instead.`,
            `${p}.tool_calls`, 'invalid_type');
        }
        if (m.tool_calls.length === 0) {
          throw bad(`Invalid '${p}.tool_calls': empty array. Expected an array with minimum length 1, but got an empty array instead.`,
            `${p}.tool_calls`, 'empty_array');
        }
        const ids = new Set();
        m.tool_calls.forEach((c, k) => {
          const q = `${p}.tool_calls[${k}]`;
          if (!isObject(c)) throw bad(`Invalid type for '${q}': expected an object.`, q, 'invalid_type');
          if (!isString(c.id)) throw bad(`Missing required parameter: '${q}.id'.`, `${q}.id`, 'missing_required_parameter');
          if (c.type === 'custom') {
            if (!isObject(c.custom) || !isString(c.custom.name) || !isString(c.custom.input)) {
              throw bad(`Missing required parameter: '${q}.custom'.`, `${q}.custom`, 'missing_required_parameter');
            }
          } else {
            if (c.type !== 'function') {
              throw bad(`Invalid value: '${String(c.type)}'. Supported values are: 'function' and 'custom'.`, `${q}.type`, 'invalid_value');
            }
            if (!isObject(c.function)) throw bad(`Missing required parameter: '${q}.function'.`, `${q}.function`, 'missing_required_parameter');
            if (!isString(c.function.name)) {
              throw bad(`Missing required parameter: '${q}.function.name'.`, `${q}.function.name`, 'missing_required_parameter');
            }
            // `arguments` is a JSON *string*; an object here is the classic client bug.
            if (!isString(c.function.arguments)) {
              throw bad(`Invalid type for '${q}.function.arguments': expected a string, but got ${typeName(c.function.arguments)} instead.`,
                `${q}.function.arguments`, 'invalid_type');
            }
          }
          if (ids.has(c.id)) throw bad(`Duplicate tool_call id '${c.id}' in '${p}.tool_calls'.`, `${q}.id`);
          ids.add(c.id);
        });
        pending = { index: i, ids, answered: new Set() };
        break;
      }
      case 'tool': {
        if (!isString(m.tool_call_id)) {
          throw bad(`Missing required parameter: '${p}.tool_call_id'.`, `${p}.tool_call_id`, 'missing_required_parameter');
        }
        checkContent(m.content, p, new Set(['text']));
        if (!pending) {
          throw bad("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
            `messages.[${i}].role`);
        }
        if (!pending.ids.has(m.tool_call_id)) {
          throw bad(`Invalid parameter: 'tool_call_id' of '${m.tool_call_id}' not found in 'tool_calls' of previous message.`,
            `messages.[${i}].tool_call_id`);
        }
        if (pending.answered.has(m.tool_call_id)) {
          throw bad(`Invalid parameter: 'tool_call_id' of '${m.tool_call_id}' was answered more than once.`,
            `messages.[${i}].tool_call_id`);
        }
        pending.answered.add(m.tool_call_id);
        break;
      }
    }
  });
  if (pending) closePending(body.messages.length);
}

// What expectations look at, extracted once per request.
export function summarize(body) {
  const msgs = body.messages;
  const system = msgs.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => textOf(m.content)).join('\n');
  let lastUser = null;
  let lastTool = null;
  let toolResults = 0;
  for (const m of msgs) {
    if (m.role === 'user') lastUser = textOf(m.content);
    if (m.role === 'tool') {
      toolResults += 1;
      lastTool = { id: m.tool_call_id, text: textOf(m.content) };
    }
  }
  const tools = (body.tools ?? []).map((t) => (t.type === 'custom' ? t.custom.name : t.function.name));
  return { model: body.model, system, lastUser, lastTool, toolResults, messageCount: msgs.length, tools };
}

// Renders a scripted reply as a ChatCompletion.
export function render(reply, ctx) {
  const calls = (reply.tool_calls ?? []).map((c) => ({
    id: c.id ?? ctx.nextId('call_'),
    type: 'function',
    function: {
      name: c.name,
      // A string is sent verbatim so scripts can hand a client malformed arguments.
      arguments: isString(c.arguments) ? c.arguments : JSON.stringify(c.arguments ?? {}),
    },
  }));
  const text = reply.text ?? (calls.length ? null : '');
  const message = { role: 'assistant', content: text, refusal: null, annotations: [] };
  if (calls.length) message.tool_calls = calls;
  const input = reply.usage?.input ?? 10;
  const output = reply.usage?.output ?? 5;
  return {
    id: `chatcmpl-${ctx.callNumber}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: ctx.model,
    choices: [{
      index: 0,
      message,
      logprobs: null,
      finish_reason: reply.finish_reason ?? (calls.length ? 'tool_calls' : 'stop'),
    }],
    usage: {
      prompt_tokens: input,
      completion_tokens: output,
      total_tokens: input + output,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0,
      },
    },
    service_tier: 'default',
  };
}

// Error body for a fault step that gave no body of its own.
export function faultBody(status) {
  if (status === 429) {
    return errorBody('Rate limit reached for requests. Please try again later.', 'requests', null, 'rate_limit_exceeded');
  }
  if (status === 401) return errorBody('Incorrect API key provided.', 'invalid_request_error', null, 'invalid_api_key');
  if (status === 400) return errorBody('Bad request (scripted fault).', 'invalid_request_error');
  if (status === 503) return errorBody('The engine is currently overloaded, please try again later.', 'server_error');
  if (status >= 500) {
    return errorBody('The server had an error while processing your request. Sorry about that!', 'server_error');
  }
  return errorBody(`Scripted fault ${status}.`, 'invalid_request_error');
}

export const requestIdHeader = 'x-request-id';
