// Server-side SigV4 verification for the local AgentCore server (docs/protocols/bedrock.md "Endpoints and SigV4 signing", "Verifying a signature").
//
// The signature itself is recomputed by the official @smithy/signature-v4 signer over the request as
// received (method, raw encoded path, decoded query, ONLY the headers the client listed in SignedHeaders,
// body) and compared in constant time. This file only parses the Authorization header, checks the scope,
// clock skew, session token and payload hash, and maps each failure to the error AWS front ends answer with.
// Nothing secret (secret key, token, signature) is ever put in an error message or returned for logging.

import crypto from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { Sha256 } from '@aws-crypto/sha256-js';

export const SERVICE = 'bedrock-agentcore'; // docs/protocols/bedrock.md "Endpoints and SigV4 signing": signing name
const SKEW_MS = 5 * 60 * 1000; // docs/protocols/bedrock.md "Verifying a signature": ±5 minutes
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

// AWS's standard front-end messages (coral services), reused verbatim so clients that match on them work.
const MSG_MISMATCH = 'The request signature we calculated does not match the signature you provided. Check your ' +
  'AWS Secret Access Key and signing method. Consult the service documentation for details.';
const MSG_BAD_TOKEN = 'The security token included in the request is invalid.';

function fail(status, type, message, reason) {
  return { ok: false, status, type, message, reason };
}

function amzDateToDate(s) {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s);
  if (!m) return null;
  const d = new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]));
  return Number.isNaN(d.getTime()) ? null : d;
}

function fmtAmzDate(d) {
  return d.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
}

// Decoded query as the signer wants it: {key: value | [values]}.
function queryObject(search) {
  const q = {};
  for (const [k, v] of new URLSearchParams(search)) {
    if (Object.prototype.hasOwnProperty.call(q, k)) q[k] = [].concat(q[k], v);
    else q[k] = v;
  }
  return q;
}

/**
 * Verifies one request. `req` is the node IncomingMessage, `body` the complete body (Buffer).
 * `cfg` = {accessKeyId, secretAccessKey, sessionToken (string|null), region}.
 * Resolves {ok: true} or {ok: false, status, type, message, reason} where `reason` is a short tag for the
 * request log (never secret).
 */
export async function verifyRequest(req, body, cfg, now = new Date()) {
  const auth = req.headers.authorization;
  if (auth === undefined) return fail(403, 'MissingAuthenticationTokenException', 'Missing Authentication Token', 'no_authorization');
  const m = /^AWS4-HMAC-SHA256 Credential=([^,\s]+),\s*SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]{64})$/.exec(auth.trim());
  if (!m) {
    return fail(400, 'IncompleteSignatureException',
      "Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' parameters (AWS4-HMAC-SHA256).", 'malformed_authorization');
  }
  const [, credential, signedList, signature] = m;
  const parts = credential.split('/');
  if (parts.length !== 5) return fail(400, 'IncompleteSignatureException', 'Credential is malformed.', 'malformed_credential');
  const [akid, day, region, service, terminator] = parts;
  if (akid !== cfg.accessKeyId) return fail(403, 'UnrecognizedClientException', MSG_BAD_TOKEN, 'unknown_access_key');
  if (terminator !== 'aws4_request') {
    return fail(403, 'InvalidSignatureException', `Credential should be scoped with a valid terminator: 'aws4_request', not '${terminator}'. `, 'bad_terminator');
  }
  if (service !== SERVICE) {
    return fail(403, 'InvalidSignatureException', `Credential should be scoped to correct service: '${SERVICE}'. `, 'bad_service');
  }
  if (region !== cfg.region) return fail(403, 'InvalidSignatureException', 'Credential should be scoped to a valid region. ', 'bad_region');

  const amzDate = req.headers['x-amz-date'];
  if (typeof amzDate !== 'string') {
    return fail(400, 'IncompleteSignatureException',
      "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.", 'no_date');
  }
  const signingDate = amzDateToDate(amzDate);
  if (!signingDate) return fail(400, 'IncompleteSignatureException', `Date must be in ISO-8601 'basic format'. Got '${amzDate}'.`, 'bad_date');
  if (day !== amzDate.slice(0, 8)) {
    return fail(403, 'InvalidSignatureException',
      `Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '${day}' != '${amzDate.slice(0, 8)}', from '${amzDate}'.`, 'scope_date');
  }
  if (signingDate.getTime() < now.getTime() - SKEW_MS) {
    return fail(403, 'InvalidSignatureException',
      `Signature expired: ${amzDate} is now earlier than ${fmtAmzDate(new Date(now.getTime() - SKEW_MS))} (${fmtAmzDate(now)} - 5 min.)`, 'expired');
  }
  if (signingDate.getTime() > now.getTime() + SKEW_MS) {
    return fail(403, 'InvalidSignatureException',
      `Signature not yet current: ${amzDate} is still later than ${fmtAmzDate(new Date(now.getTime() + SKEW_MS))} (${fmtAmzDate(now)} + 5 min.)`, 'not_yet_current');
  }

  const signed = signedList.split(';');
  if (!signed.includes('host')) {
    return fail(403, 'InvalidSignatureException', "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.", 'host_unsigned');
  }
  const headers = {};
  for (const name of signed) {
    if (name !== name.toLowerCase() || req.headers[name] === undefined) {
      return fail(403, 'InvalidSignatureException', MSG_MISMATCH, `signed_header_missing:${name}`);
    }
    headers[name] = String(req.headers[name]);
  }

  // Session token (docs/protocols/bedrock.md "Endpoints and SigV4 signing", "Verifying a signature"):
  // temporary credentials must carry it; long-term ones must not.
  const token = req.headers['x-amz-security-token'];
  if (cfg.sessionToken) {
    if (typeof token !== 'string' || !crypto.timingSafeEqual(sha(token), sha(cfg.sessionToken))) {
      return fail(403, 'UnrecognizedClientException', MSG_BAD_TOKEN, token === undefined ? 'token_missing' : 'token_wrong');
    }
  } else if (token !== undefined) {
    return fail(403, 'UnrecognizedClientException', MSG_BAD_TOKEN, 'token_unexpected');
  }

  // The signer trusts x-amz-content-sha256 as the payload hash (docs/protocols/bedrock.md "Verifying a
  // signature"); a non-S3 service hashes the body itself, so a header that lies about the body can never verify.
  const bodyHash = body.length ? crypto.createHash('sha256').update(body).digest('hex') : EMPTY_SHA256;
  const claimed = req.headers['x-amz-content-sha256'];
  if (claimed !== undefined && claimed !== bodyHash) return fail(403, 'InvalidSignatureException', MSG_MISMATCH, 'payload_hash_mismatch');

  const raw = req.url;
  const q = raw.indexOf('?');
  const request = {
    method: req.method,
    protocol: 'http:',
    hostname: String(req.headers.host ?? '').replace(/:\d+$/, ''),
    path: q >= 0 ? raw.slice(0, q) : raw, // still percent-encoded: the signer encodes it again (docs/protocols/bedrock.md "Endpoints and SigV4 signing")
    query: queryObject(q >= 0 ? raw.slice(q + 1) : ''),
    headers,
    body: body.length ? body : undefined,
  };
  const signer = new SignatureV4({
    service: SERVICE,
    region,
    credentials: { accessKeyId: cfg.accessKeyId, secretAccessKey: cfg.secretAccessKey, sessionToken: cfg.sessionToken || undefined },
    sha256: Sha256,
    uriEscapePath: true,
    // Not the signer's default: with applyChecksum the signer would ADD x-amz-content-sha256 to the canonical
    // headers when the client did not send it, so clients that legitimately omit it (botocore, libcurl;
    // docs/protocols/bedrock.md "Endpoints and SigV4 signing") could never verify. A client that sent and
    // signed it is covered because it is in `headers`.
    applyChecksum: false,
  });
  let expected;
  try {
    const out = await signer.sign(request, { signingDate, signableHeaders: new Set(signed) });
    expected = /Signature=([0-9a-f]{64})/.exec(out.headers.authorization)[1];
    // The canonical header list the signer used must be the client's list, else the signatures differ anyway;
    // comparing it explicitly gives a clearer log reason.
    const usedList = /SignedHeaders=([^,\s]+)/.exec(out.headers.authorization)[1];
    if (usedList !== signedList) return fail(403, 'InvalidSignatureException', MSG_MISMATCH, 'signed_headers_differ');
  } catch {
    return fail(403, 'InvalidSignatureException', MSG_MISMATCH, 'signer_error');
  }
  if (!crypto.timingSafeEqual(Buffer.from(expected), Buffer.from(signature))) {
    return fail(403, 'InvalidSignatureException', MSG_MISMATCH, 'signature_mismatch');
  }
  return { ok: true };
}

function sha(s) {
  return crypto.createHash('sha256').update(String(s)).digest();
}
