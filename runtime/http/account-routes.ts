/**
 * @module The Express routes of DESIGN §11 under `/api` (sign-up, e-mail verification, password
 * reset, changing one's password, deleting one's account), each a thin wrapper around the
 * framework-free functions of `runtime/auth/` (`signup.ts`, `password-reset.ts`, `account.ts`).
 * Mounted after `authenticate`, with a JSON body parser; every error is the DESIGN §4 body.
 */
import express, { Router } from 'express';
import { HttpError } from '../errors.js';
import type { AuthService } from '../auth/auth-service.js';
import { callerOf } from '../auth/caller.js';
import { clearedCookies } from '../auth/cookies.js';
import { credentialInput } from '../auth/authenticate.js';
import { signUp, verifyEmail } from '../auth/signup.js';
import { confirmPasswordReset, requestPasswordReset } from '../auth/password-reset.js';
import { changePassword, deleteOwnAccount } from '../auth/account.js';

/** The paths of this router (the JSON body parser is mounted on them). */
export const ACCOUNT_PATHS = ['/_signup', '/_verify-email', '/_password-reset', '/_password-reset/confirm', '/_me/password'];

const form = express.urlencoded({ extended: false, limit: '16kb' });

/**
 * The router of `_signup`, `_verify-email`, `_password-reset`, `_password-reset/confirm`,
 * `_me/password` and `DELETE _me`.
 * Source: DESIGN §11.
 */
export function accountRouter(auth: AuthService): Router {
  const router = Router();
  router.post('/_signup', form, async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.status(201).json(await signUp(auth, req.body, auth.clientAddress(req)));
  });
  router.post('/_verify-email', form, async (req, res) => {
    await verifyEmail(auth, req.body, auth.clientAddress(req));
    res.status(204).end();
  });
  router.post('/_password-reset', form, async (req, res) => {
    await requestPasswordReset(auth, req.body, auth.clientAddress(req));
    res.status(202).end();
  });
  router.post('/_password-reset/confirm', form, async (req, res) => {
    await confirmPasswordReset(auth, req.body, auth.clientAddress(req));
    res.status(204).end();
  });
  router.post('/_me/password', form, async (req, res) => {
    await changePassword(auth, callerOf(res), req.body, auth.clientAddress(req));
    res.status(204).end();
  });
  router.delete('/_me', async (req, res) => {
    await deleteOwnAccount(auth, callerOf(res), req.body, auth.clientAddress(req));
    res.append('Set-Cookie', clearedCookies(auth, credentialInput(req, auth).scheme === 'https'));
    res.status(204).end();
  });
  for (const path of ACCOUNT_PATHS)
    router.all(path, (req) => {
      throw new HttpError('METHOD_NOT_ALLOWED', `${req.method} is not supported on ${req.path}`);
    });
  return router;
}
