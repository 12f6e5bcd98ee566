// Event-stream frames of the InvokeCodeInterpreter response (docs/protocols/bedrock.md "Events and exception frames", "The event stream"), encoded by the official
// @smithy/core event-stream codec. The only bytes touched by hand are the deliberate corruptions used by
// fault directives (corruptCrc), applied on top of a correctly encoded frame.

import { EventStreamCodec } from '@smithy/core/event-streams';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';

const codec = new EventStreamCodec(toUtf8, fromUtf8);
const str = (value) => ({ type: 'string', value });

function encode(headers, payload) {
  return Buffer.from(codec.encode({ headers, body: payload }));
}

// An event (docs/protocols/bedrock.md "Events and exception frames"): headers in the order the service
// uses, payload = JSON of CodeInterpreterResult.
export function resultFrame(result) {
  return eventFrame('result', result);
}

// Any `event` message; an unknown :event-type is what the `unknown_event` directive sends.
export function eventFrame(eventType, payloadObject) {
  return encode({
    ':message-type': str('event'),
    ':event-type': str(eventType),
    ':content-type': str('application/json'),
  }, fromUtf8(JSON.stringify(payloadObject)));
}

// A modeled exception (docs/protocols/bedrock.md "Events and exception frames"): :exception-type is the
// union member name (lowerCamel), payload {"message": ...}.
export function exceptionFrame(exceptionType, payloadObject) {
  return encode({
    ':message-type': str('exception'),
    ':exception-type': str(exceptionType),
    ':content-type': str('application/json'),
  }, fromUtf8(JSON.stringify(payloadObject)));
}

// Any other error (docs/protocols/bedrock.md "Events and exception frames"): :error-code and :error-message
// headers, empty payload.
export function errorFrame(code, message) {
  return encode({
    ':message-type': str('error'),
    ':error-code': str(code),
    ':error-message': str(message),
  }, new Uint8Array(0));
}

// docs/protocols/bedrock.md "The event stream": the prelude CRC is bytes 8..11, the message CRC the last
// 4 bytes. Inverting every bit of one of them gives a frame that is correct in every other respect.
export function corruptCrc(frame, which) {
  const out = Buffer.from(frame);
  if (which === 'prelude') {
    for (let i = 8; i < 12; i++) out[i] ^= 0xff;
  } else {
    for (let i = out.length - 4; i < out.length; i++) out[i] ^= 0xff;
  }
  return out;
}

export function decodeFrame(bytes) {
  return codec.decode(bytes);
}
