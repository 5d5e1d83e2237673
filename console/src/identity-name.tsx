/**
 * An identity id (a row's `createdBy`) shown as the identity's name, linked to its page in
 * Identities (`#/identities/<id>`). Names come from `GET /api/_admin/identities/<id>`, once per id
 * per page load; an id that no longer names an identity shows as the id, struck through.
 */
import { useEffect, useState } from 'preact/hooks';
import { call } from './api';
import { href } from './router';

/** Name (or null for a deleted identity) per id, as a promise shared by every cell showing it. */
const names = new Map<string, Promise<string | null>>();

/** The identity's name: a user's username, a service account's name; null when it is gone. */
export function identityName(id: string): Promise<string | null> {
  let name = names.get(id);
  if (!name) {
    name = call<{ name?: string }>('GET', `/_admin/identities/${encodeURIComponent(id)}`).then(
      (a) => (a.status === 200 && typeof a.body?.name === 'string' ? a.body.name : null),
      () => null,
    );
    names.set(id, name);
  }
  return name;
}

export function IdentityName({ id }: { id: string }) {
  const [name, setName] = useState<string | null | undefined>(undefined);
  useEffect(() => {
    let live = true;
    identityName(id).then((n) => live && setName(n));
    return () => {
      live = false;
    };
  }, [id]);
  if (name === null) return <s title="this identity no longer exists">{id}</s>;
  return (
    <a href={href('identities', id)} class="identity" data-identity={id} title={id} onClick={(e) => e.stopPropagation()}>
      {name ?? id}
    </a>
  );
}
