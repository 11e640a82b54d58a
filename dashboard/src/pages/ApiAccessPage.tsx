import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { NavLink } from 'react-router';
import { api, ApiError } from '../api';
import { useSession } from '../session';
import type { One, Token } from '../types';
import { ConfirmButton, CopyButton, DataTable, ErrorBox, Field, PageHeader, QueryStatus, StatusBadge, Time } from '../ui';
import { TOKEN_NAME_MAX } from '../../../src/platform/text-limits';

function tokenState(token: Token): string {
  if (token.revokedAt) return 'REVOKED';
  if (token.expiresAt && new Date(token.expiresAt).getTime() <= Date.now()) return 'EXPIRED';
  return 'ACTIVE';
}

export function ApiAccessPage() {
  const client = useQueryClient();
  const allScopes = useSession().data?.tokenScopes.length ?? 0;
  const tokens = useQuery({ queryKey: ['tokens'], queryFn: () => api<{ data: Token[] }>('/tokens?limit=100') });
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<{ token: string; name: string } | null>(null);

  return (
    <section>
      <PageHeader title="Settings" description="How your software reaches Waygate." />
      <nav className="tabs" aria-label="Settings sections">
        <NavLink to="/settings/api-access">API Access</NavLink>
      </nav>
      <div className="section-head">
        <h2>API tokens</h2>
        {!creating ? (
          <button type="button" className="button primary" onClick={() => { setCreating(true); setCreated(null); }}>
            Create New Token
          </button>
        ) : null}
      </div>
      <p className="muted">
        Send a token in the <code>x-api-key</code> header of every API request. Give each program its own token, so you can revoke one without
        touching the others.
      </p>
      {created ? <NewTokenPanel token={created.token} name={created.name} onDone={() => setCreated(null)} /> : null}
      {creating ? (
        <CreateTokenForm
          onCancel={() => setCreating(false)}
          onCreated={(token, name) => {
            setCreating(false);
            setCreated({ token, name });
            void client.invalidateQueries({ queryKey: ['tokens'] });
          }}
        />
      ) : null}
      <QueryStatus query={tokens} what="tokens" empty="No tokens yet." />
      {tokens.data && tokens.data.data.length > 0 ? (
        <DataTable caption="API tokens" columns={['Name', 'Token', 'Scopes', 'Created', 'Last used', 'Expires', 'State']} actions>
          {tokens.data.data.map((token) => (
            <tr key={token.id} data-token-id={token.id}>
              <th scope="row" data-label="Name">{token.name}</th>
              <td data-label="Token">
                <code>
                  {token.prefix}…{token.last4}
                </code>
              </td>
              <td data-label="Scopes" className="small">{token.scopes.length === allScopes ? 'All' : token.scopes.join(', ')}</td>
              <td data-label="Created">
                <Time value={token.createdAt} />
              </td>
              <td data-label="Last used">
                <Time value={token.lastUsedAt} empty="Never" />
              </td>
              <td data-label="Expires">
                <Time value={token.expiresAt} empty="Never" />
              </td>
              <td data-label="State">
                <StatusBadge status={tokenState(token)} />
              </td>
              <td>
                {!token.revokedAt ? (
                  <ConfirmButton
                    label="Revoke"
                    accessibleName={`Revoke token ${token.name}`}
                    title={`Revoke “${token.name}”?`}
                    message={<p>Programs using this token are refused from their next request. This cannot be undone.</p>}
                    confirmLabel="Revoke token"
                    onConfirm={async () => {
                      await api(`/tokens/${token.id}`, { method: 'DELETE' });
                      await client.invalidateQueries({ queryKey: ['tokens'] });
                    }}
                  />
                ) : null}
              </td>
            </tr>
          ))}
        </DataTable>
      ) : null}
    </section>
  );
}

function CreateTokenForm({ onCreated, onCancel }: { onCreated: (token: string, name: string) => void; onCancel: () => void }) {
  const scopes = useSession().data?.tokenScopes ?? [];
  const [name, setName] = useState('');
  const [chosen, setChosen] = useState<Set<string>>(() => new Set(scopes));
  const [expires, setExpires] = useState('');
  const create = useMutation({
    mutationFn: () =>
      api<One<{ token: string } & Token>>('/tokens', {
        method: 'POST',
        body: {
          name: name.trim(),
          ...(chosen.size === scopes.length ? {} : { scopes: [...chosen] }),
          ...(expires ? { expiresAt: new Date(`${expires}T23:59:59`).toISOString() } : {}),
        },
      }),
    onSuccess: (result) => onCreated(result.data.token, result.data.name),
  });
  const submit = (event: FormEvent): void => {
    event.preventDefault();
    create.mutate();
  };
  const toggle = (scope: string): void => {
    const next = new Set(chosen);
    if (next.has(scope)) next.delete(scope);
    else next.add(scope);
    setChosen(next);
  };
  const fieldError = (field: string) => (create.error instanceof ApiError ? create.error.fieldMessage(field) : undefined);
  return (
    <form className="card" onSubmit={submit} aria-labelledby="new-token-title">
      <h3 id="new-token-title">New token</h3>
      <ErrorBox error={create.error} title="Could not create the token." />
      <Field label="Name" hint="What uses it, e.g. “Order system”." error={fieldError('name')}>
        {(props) => <input {...props} required maxLength={TOKEN_NAME_MAX} value={name} onChange={(e) => setName(e.target.value)} />}
      </Field>
      <fieldset className="scopes">
        <legend>Scopes</legend>
        <p className="hint">What the token may do. Keep only what the program needs.</p>
        <div className="checkbox-grid">
          {scopes.map((scope) => (
            <label key={scope} className="checkbox">
              <input type="checkbox" checked={chosen.has(scope)} onChange={() => toggle(scope)} /> <code>{scope}</code>
            </label>
          ))}
        </div>
      </fieldset>
      <Field label="Expires on (optional)" hint="Leave empty for a token that does not expire." error={fieldError('expiresAt')}>
        {(props) => <input {...props} type="date" value={expires} onChange={(e) => setExpires(e.target.value)} />}
      </Field>
      <div className="row">
        <button type="submit" className="button primary" disabled={create.isPending || name.trim() === '' || chosen.size === 0}>
          {create.isPending ? 'Creating…' : 'Create token'}
        </button>
        <button type="button" className="button secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function NewTokenPanel({ token, name, onDone }: { token: string; name: string; onDone: () => void }) {
  return (
    <div className="card new-secret" role="region" aria-labelledby="created-token-title">
      <h3 id="created-token-title">Token “{name}” created</h3>
      <div className="alert alert-warning">
        <strong>Copy it now.</strong> This is the only time the token is shown: Waygate keeps only a hash of it and cannot show it again.
      </div>
      <div className="secret-row">
        <label htmlFor="new-token-value" className="visually-hidden">
          The new token
        </label>
        <input id="new-token-value" className="mono" readOnly value={token} onFocus={(e) => e.target.select()} data-testid="new-token-value" />
        <CopyButton value={token} />
      </div>
      <button type="button" className="button secondary small" onClick={onDone}>
        I have copied it
      </button>
    </div>
  );
}
