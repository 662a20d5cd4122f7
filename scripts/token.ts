/** `npm run token -- <user> [hours]`: prints an HS256 JWT for the local server (sub = user). */
import { SignJWT } from 'jose';
import { localSecret } from './local-secret.js';

const [user, hours = '12'] = process.argv.slice(2);
if (!user) {
  console.error('usage: npm run token -- <user> [hours]');
  process.exit(2);
}
const secret = process.env.AUTH_JWT_SECRET ?? (await localSecret(process.env.DATA_DIR ?? './.data'));
let jwt = new SignJWT({ sub: user })
  .setProtectedHeader({ alg: 'HS256' })
  .setIssuedAt()
  .setExpirationTime(`${Number(hours)}h`);
if (process.env.AUTH_ISSUER) jwt = jwt.setIssuer(process.env.AUTH_ISSUER);
if (process.env.AUTH_AUDIENCE) jwt = jwt.setAudience(process.env.AUTH_AUDIENCE);
console.log(await jwt.sign(new TextEncoder().encode(secret)));
