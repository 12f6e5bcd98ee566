// Small helpers shared by the protocol modules.

// Thrown by validators; the protocol module turns it into its own error body.
export class RequestError extends Error {
  constructor(status, message, extra = {}) {
    super(message);
    this.status = status;
    this.extra = extra; // protocol-specific fields, e.g. OpenAI's param/code
  }
}

export const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
export const isString = (v) => typeof v === 'string';

// A JSON-ish type name for error messages, in the words the services use.
export function typeName(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

// Plain text of an OpenAI or Anthropic content value: a string, or an array whose
// text parts are joined with "\n". Non-text parts are skipped.
export function textOf(content) {
  if (isString(content)) return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((p) => isObject(p) && p.type === 'text' && isString(p.text))
    .map((p) => p.text)
    .join('\n');
}
