import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link, NavLink, useNavigate, useParams } from 'react-router';
import { api, ApiError } from '../api';
import type { Contact, Group, Member, One, Page } from '../types';
import { ConfirmButton, Empty, ErrorBox, Field, formatPhone, Loading, PageHeader, Pager, QueryStatus, Time } from '../ui';
import { GROUP_NAME_MAX } from '../../../src/platform/text-limits';

export function GroupsPage() {
  const { groupId } = useParams();
  const client = useQueryClient();
  const navigate = useNavigate();
  const [page, setPage] = useState(1);
  const groups = useQuery({
    queryKey: ['groups', 'list', page],
    queryFn: () => api<Page<Group>>('/groups', { query: { page, limit: 50 } }),
    placeholderData: keepPreviousData,
  });
  const [name, setName] = useState('');
  const create = useMutation({
    mutationFn: () => api<One<Group>>('/groups', { method: 'POST', body: { name: name.trim() } }),
    onSuccess: async (result) => {
      setName('');
      await client.invalidateQueries({ queryKey: ['groups'] });
      navigate(`/groups/${result.data.id}`);
    },
  });
  const submit = (event: FormEvent): void => {
    event.preventDefault();
    create.mutate();
  };

  return (
    <section>
      <PageHeader title="Groups" description="Named sets of contacts. Sending to a group sends one message to each member." />
      <div className="split">
        <div>
          <form className="card inline-form" onSubmit={submit} aria-label="Create a group">
            <Field label="New group" error={create.error instanceof ApiError ? create.error.fieldMessage('name') : undefined}>
              {(props) => <input {...props} required maxLength={GROUP_NAME_MAX} value={name} onChange={(e) => setName(e.target.value)} placeholder="e.g. Customers" />}
            </Field>
            <button type="submit" className="button primary" disabled={create.isPending || name.trim() === ''}>
              Create
            </button>
          </form>
          <QueryStatus query={groups} what="groups" empty="No groups yet." />
          <ErrorBox error={create.error} />
          <ul className="list-nav" aria-label="Groups">
            {groups.data?.data.map((group) => (
              <li key={group.id}>
                <NavLink to={`/groups/${group.id}`}>
                  <span>{group.name}</span>
                  <span className="muted small">
                    {group.contactsCount.toLocaleString()} member{group.contactsCount === 1 ? '' : 's'}
                  </span>
                </NavLink>
              </li>
            ))}
          </ul>
          {groups.data ? <Pager label="Groups" page={page} limit={groups.data.meta.limit} total={groups.data.meta.total} onPage={setPage} /> : null}
        </div>
        <div>{groupId ? <GroupDetail key={groupId} groupId={groupId} /> : <Empty>Choose a group to see and change its members.</Empty>}</div>
      </div>
    </section>
  );
}

function GroupDetail({ groupId }: { groupId: string }) {
  const client = useQueryClient();
  const navigate = useNavigate();
  const [page, setPage] = useState(1);
  const group = useQuery({ queryKey: ['groups', 'one', groupId], queryFn: () => api<One<Group>>(`/groups/${groupId}`) });
  const members = useQuery({
    queryKey: ['groups', 'members', groupId, page],
    queryFn: () => api<Page<Member>>(`/groups/${groupId}/contacts`, { query: { page, limit: 25 } }),
    placeholderData: keepPreviousData,
  });
  const refresh = () => client.invalidateQueries({ queryKey: ['groups'] });
  const [renaming, setRenaming] = useState(false);
  const [newName, setNewName] = useState('');
  const rename = useMutation({
    mutationFn: () => api(`/groups/${groupId}`, { method: 'PATCH', body: { name: newName.trim() } }),
    onSuccess: async () => {
      setRenaming(false);
      await refresh();
    },
  });
  const remove = useMutation({ mutationFn: (contactId: string) => api(`/groups/${groupId}/contacts/${contactId}`, { method: 'DELETE' }), onSuccess: refresh });

  if (group.isPending) return <Loading what="the group" />;
  if (group.error) return <ErrorBox error={group.error} />;
  const data = group.data.data;
  return (
    <div className="card" aria-labelledby="group-title">
      <div className="row between wrap">
        {renaming ? (
          <form
            className="inline-form"
            onSubmit={(event) => {
              event.preventDefault();
              rename.mutate();
            }}
          >
            <Field label="Group name" error={rename.error instanceof ApiError ? rename.error.message : undefined}>
              {(props) => <input {...props} required maxLength={GROUP_NAME_MAX} value={newName} onChange={(e) => setNewName(e.target.value)} autoFocus />}
            </Field>
            <button type="submit" className="button primary small">
              Save
            </button>
            <button type="button" className="button secondary small" onClick={() => setRenaming(false)}>
              Cancel
            </button>
          </form>
        ) : (
          <h2 id="group-title">{data.name}</h2>
        )}
        <div className="row wrap">
          {!renaming ? (
            <button
              type="button"
              className="button secondary small"
              onClick={() => {
                setNewName(data.name);
                setRenaming(true);
              }}
            >
              Rename
            </button>
          ) : null}
          <Link className="button secondary small" to={`/send?groupId=${encodeURIComponent(groupId)}`}>
            Send to group
          </Link>
          <ConfirmButton
            label="Delete group"
            title={`Delete ${data.name}?`}
            message={<p>The group goes; its contacts stay.</p>}
            confirmLabel="Delete group"
            onConfirm={async () => {
              await api(`/groups/${groupId}`, { method: 'DELETE' });
              await refresh();
              navigate('/groups');
            }}
          />
        </div>
      </div>
      <p className="muted small">
        {data.contactsCount.toLocaleString()} member{data.contactsCount === 1 ? '' : 's'} · created <Time value={data.createdAt} />
      </p>
      <AddMembers groupId={groupId} />
      <ErrorBox error={remove.error} />
      <h3>Members</h3>
      <QueryStatus query={members} what="members" empty="No members yet: add contacts above." />
      <ul className="member-list">
        {members.data?.data.map((member) => (
          <li key={member.id} className="row between">
            <span>
              {member.name} <span className="muted small">{formatPhone(member.phoneNumber)}</span>
            </span>
            <button type="button" className="button secondary small" disabled={remove.isPending} onClick={() => remove.mutate(member.id)} aria-label={`Remove ${member.name} from the group`}>
              Remove
            </button>
          </li>
        ))}
      </ul>
      {members.data ? <Pager label="Members" page={page} limit={members.data.meta.limit} total={members.data.meta.total} onPage={setPage} /> : null}
    </div>
  );
}

/** Finds contacts by name or number and adds the chosen ones. */
function AddMembers({ groupId }: { groupId: string }) {
  const client = useQueryClient();
  const [search, setSearch] = useState('');
  const [submitted, setSubmitted] = useState<string | null>(null);
  const [chosen, setChosen] = useState<string[]>([]);
  const found = useQuery({
    queryKey: ['contacts', { query: submitted, page: 1, for: groupId }],
    queryFn: () => api<Page<Contact>>('/contacts', { query: { search: submitted ?? '', limit: 20 } }),
    enabled: submitted !== null,
  });
  // Which of the contacts found are members already: they are not offered again.
  const foundIds = found.data?.data.map((contact) => contact.id) ?? [];
  const already = useQuery({
    queryKey: ['groups', 'members', groupId, 'among', foundIds],
    queryFn: () => api<Page<Contact>>(`/groups/${groupId}/contacts`, { query: { contactIds: foundIds.join(',') } }),
    enabled: foundIds.length > 0,
  });
  const memberIds = new Set(already.data?.data.map((member) => member.id) ?? []);
  const offered = already.data ? (found.data?.data ?? []).filter((contact) => !memberIds.has(contact.id)) : [];
  const add = useMutation({
    mutationFn: () => api<{ data: { added: number } }>(`/groups/${groupId}/contacts`, { method: 'POST', body: { contactIds: chosen } }),
    onSuccess: async () => {
      setChosen([]);
      await client.invalidateQueries({ queryKey: ['groups'] });
    },
  });
  return (
    <details className="add-members">
      <summary>Add members</summary>
      <form
        className="filters"
        onSubmit={(event) => {
          event.preventDefault();
          setSubmitted(search.trim());
        }}
      >
        <label htmlFor={`member-search-${groupId}`}>Find contacts</label>
        <input id={`member-search-${groupId}`} type="search" value={search} onChange={(e) => setSearch(e.target.value)} placeholder="Name or number" />
        <button type="submit" className="button secondary small">
          Search
        </button>
      </form>
      {found.data && found.data.data.length === 0 ? <p className="small muted">No contact matches.</p> : null}
      {found.data && already.data && found.data.data.length > 0 ? (
        offered.length === 0 ? (
          <p className="small muted">Every contact found is already in the group.</p>
        ) : (
          <form
            onSubmit={(event) => {
              event.preventDefault();
              add.mutate();
            }}
          >
            <fieldset>
              <legend className="small">Choose contacts to add</legend>
              <div className="checkbox-grid">
                {offered.map((contact) => (
                  <label key={contact.id} className="checkbox">
                    <input
                      type="checkbox"
                      checked={chosen.includes(contact.id)}
                      onChange={(e) => setChosen(e.target.checked ? [...chosen, contact.id] : chosen.filter((id) => id !== contact.id))}
                    />{' '}
                    {contact.name} <span className="muted small">{formatPhone(contact.phoneNumber)}</span>
                  </label>
                ))}
              </div>
            </fieldset>
            {memberIds.size > 0 ? (
              <p className="small muted">
                {memberIds.size} of the contacts found {memberIds.size === 1 ? 'is' : 'are'} already in the group.
              </p>
            ) : null}
            <button type="submit" className="button primary small" disabled={chosen.length === 0 || add.isPending}>
              Add {chosen.length > 0 ? chosen.length : ''} to the group
            </button>
            {add.data ? (
              <span className="small muted" role="status">
                {' '}
                Added {add.data.data.added}.
              </span>
            ) : null}
          </form>
        )
      ) : null}
      <ErrorBox error={found.error ?? already.error ?? add.error} />
    </details>
  );
}
