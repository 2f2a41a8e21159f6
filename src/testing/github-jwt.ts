/**
 * App JWTs as GitHub checks them: RS256 over `header.payload`, `iss` = the App id,
 * `iat` not in the future (60 s of skew allowed), `exp` in the future and at most ten
 * minutes after `iat`. Also makes the App's key pair for a test.
 */
import { generateKeyPairSync, verify } from 'node:crypto';

export interface AppKeyPair {
  privateKeyPem: string;
  publicKeyPem: string;
}

/** A fresh RSA key pair, PKCS#1 like the keys GitHub hands out. */
export function generateAppKeyPair(): AppKeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privateKeyPem: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

/** Null when valid, else GitHub's message for it. */
export function checkAppJwt(
  jwt: string,
  appId: number,
  publicKeyPem: string,
  nowS = Math.floor(Date.now() / 1000),
): string | null {
  const parts = jwt.split('.');
  if (parts.length !== 3) return 'A JSON web token could not be decoded';
  const [h, p, s] = parts as [string, string, string];
  let header: { alg?: unknown };
  let payload: { iss?: unknown; iat?: unknown; exp?: unknown };
  try {
    header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8')) as typeof header;
    payload = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as typeof payload;
  } catch {
    return 'A JSON web token could not be decoded';
  }
  if (header.alg !== 'RS256') return 'A JSON web token could not be decoded';
  if (!verify('RSA-SHA256', Buffer.from(`${h}.${p}`), publicKeyPem, Buffer.from(s, 'base64url'))) {
    return 'A JSON web token could not be decoded';
  }
  if (String(payload.iss) !== String(appId)) return "'Issuer' claim ('iss') must be an Integer";
  if (typeof payload.iat !== 'number' || payload.iat > nowS + 60) {
    return "'Issued at' claim ('iat') must be an Integer representing a time in the past";
  }
  if (typeof payload.exp !== 'number' || payload.exp <= nowS)
    return (
      "'Expiration time' claim ('exp') must be a numeric value representing the future time " +
      'at which the assertion expires'
    );
  if (payload.exp - payload.iat > 660) return "'Expiration time' claim ('exp') is too far in the future";
  return null;
}
