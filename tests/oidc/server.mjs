// Starts oauth2-mock-server on a random loopback port and prints {"issuer": …} on stdout.
// Tokens come from POST /token (client_credentials); the form fields sub, org_id, scope, aud,
// iss and exp_offset (seconds, may be negative) become claims, so tests can mint any session
// (iss: a token for another issuer that serves this provider's keys).
// A line "rotate" on stdin adds a new signing key (the JWKS then lists both).
import { createInterface } from 'node:readline';
import { OAuth2Server } from 'oauth2-mock-server';

const server = new OAuth2Server();
await server.issuer.keys.generate('RS256');
server.service.on('beforeTokenSigning', (token, req) => {
  const body = req.body ?? {};
  for (const claim of ['sub', 'org_id', 'scope', 'aud', 'iss']) {
    if (body[claim] !== undefined) token.payload[claim] = body[claim];
  }
  if (body.exp_offset !== undefined) {
    const now = Math.floor(Date.now() / 1000);
    token.payload.exp = now + Number(body.exp_offset);
    token.payload.nbf = Math.min(token.payload.nbf ?? now, token.payload.exp - 1);
    token.payload.iat = token.payload.nbf;
  }
});
await server.start(0, '127.0.0.1');
console.log(JSON.stringify({ issuer: server.issuer.url }));

createInterface({ input: process.stdin }).on('line', async (line) => {
  if (line.trim() === 'rotate') {
    const key = await server.issuer.keys.generate('RS256');
    console.log(JSON.stringify({ rotated: key.kid }));
  }
});
process.stdin.on('end', () => server.stop().then(() => process.exit(0)));
