import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState, type FormEvent } from 'react';
import { api, ApiError } from '../api';
import type { Contact, ImportReport, One, Page } from '../types';
import { ConfirmButton, DataTable, ErrorBox, Field, formatPhone, Notice, PageHeader, Pager, QueryStatus, Time } from '../ui';
import { CONTACT_NAME_MAX } from '../../../src/platform/text-limits';

const LIMIT = 25;

export function ContactsPage() {
  const [search, setSearch] = useState('');
  const [query, setQuery] = useState('');
  const [page, setPage] = useState(1);
  // Searches as you type, once typing pauses.
  useEffect(() => {
    const timer = window.setTimeout(() => {
      setQuery(search.trim());
      setPage(1);
    }, 250);
    return () => window.clearTimeout(timer);
  }, [search]);
  const contacts = useQuery({
    queryKey: ['contacts', { query, page }],
    queryFn: () => api<Page<Contact>>('/contacts', { query: { search: query, page, limit: LIMIT } }),
    placeholderData: keepPreviousData,
  });
  const [adding, setAdding] = useState(false);
  const [importing, setImporting] = useState(false);

  return (
    <section>
      <PageHeader
        title="Contacts"
        description="People you message. Phone numbers are unique in your account."
        actions={
          <>
            <button type="button" className="button secondary" aria-expanded={importing} onClick={() => setImporting(!importing)}>
              Import CSV
            </button>
            <button type="button" className="button primary" aria-expanded={adding} onClick={() => setAdding(!adding)}>
              Add contact
            </button>
          </>
        }
      />
      {adding ? <ContactForm onDone={() => setAdding(false)} /> : null}
      {importing ? <ImportForm /> : null}
      <div className="filters">
        <label htmlFor="contact-search">Search</label>
        <input id="contact-search" type="search" placeholder="Name or number" value={search} onChange={(e) => setSearch(e.target.value)} />
        <span className="small muted" role="status">
          {contacts.data ? `${contacts.data.meta.total.toLocaleString()} contact${contacts.data.meta.total === 1 ? '' : 's'}${query ? ` match “${query}”` : ''}` : ''}
        </span>
      </div>
      <QueryStatus query={contacts} what="contacts" empty={query ? 'No contact matches.' : 'No contacts yet. Add one, or import a CSV file.'} />
      {contacts.data && contacts.data.data.length > 0 ? (
        <DataTable caption="Contacts" columns={['Name', 'Phone number', 'Added']} actions>
          {contacts.data.data.map((contact) => (
            <ContactRow key={contact.id} contact={contact} />
          ))}
        </DataTable>
      ) : null}
      {contacts.data ? <Pager label="Contacts" page={page} limit={contacts.data.meta.limit} total={contacts.data.meta.total} onPage={setPage} /> : null}
    </section>
  );
}

function ContactForm({ contact, onDone }: { contact?: Contact; onDone: () => void }) {
  const client = useQueryClient();
  const [name, setName] = useState(contact?.name ?? '');
  const [phoneNumber, setPhoneNumber] = useState(contact ? `+${contact.phoneNumber}` : '');
  const save = useMutation({
    mutationFn: () =>
      contact
        ? api<One<Contact>>(`/contacts/${contact.id}`, { method: 'PATCH', body: { name, phoneNumber } })
        : api<One<Contact>>('/contacts', { method: 'POST', body: { name, phoneNumber } }),
    onSuccess: async () => {
      await client.invalidateQueries({ queryKey: ['contacts'] });
      onDone();
    },
  });
  const submit = (event: FormEvent): void => {
    event.preventDefault();
    save.mutate();
  };
  const fieldError = (field: string) => (save.error instanceof ApiError ? save.error.fieldMessage(field) : undefined);
  return (
    <form className={contact ? 'inline-form' : 'card inline-form'} onSubmit={submit} aria-label={contact ? `Edit ${contact.name}` : 'Add a contact'}>
      <Field label="Name" error={fieldError('name')}>
        {(props) => <input {...props} required maxLength={CONTACT_NAME_MAX} value={name} onChange={(e) => setName(e.target.value)} autoFocus />}
      </Field>
      <Field label="Phone number" hint="With the country code." error={fieldError('phoneNumber')}>
        {(props) => <input {...props} required inputMode="tel" value={phoneNumber} onChange={(e) => setPhoneNumber(e.target.value)} />}
      </Field>
      <div className="row">
        <button type="submit" className="button primary" disabled={save.isPending}>
          {contact ? 'Save' : 'Add'}
        </button>
        <button type="button" className="button secondary" onClick={onDone}>
          Cancel
        </button>
      </div>
      {save.error && !fieldError('name') && !fieldError('phoneNumber') ? <ErrorBox error={save.error} /> : null}
    </form>
  );
}

function ContactRow({ contact }: { contact: Contact }) {
  const client = useQueryClient();
  const [editing, setEditing] = useState(false);
  if (editing) {
    return (
      <tr>
        <td colSpan={4}>
          <ContactForm contact={contact} onDone={() => setEditing(false)} />
        </td>
      </tr>
    );
  }
  return (
    <tr>
      <th scope="row" data-label="Name">{contact.name}</th>
      <td data-label="Phone" className="nowrap">{formatPhone(contact.phoneNumber)}</td>
      <td data-label="Added" className="nowrap">
        <Time value={contact.createdAt} />
      </td>
      <td className="row end">
        <button type="button" className="button secondary small" onClick={() => setEditing(true)} aria-label={`Edit ${contact.name}`}>
          Edit
        </button>
        <ConfirmButton
          label="Delete"
          accessibleName={`Delete contact ${contact.name}`}
          title={`Delete ${contact.name}?`}
          message={<p>The contact leaves every group. Messages already sent to the number stay in the history.</p>}
          confirmLabel="Delete contact"
          onConfirm={async () => {
            await api(`/contacts/${contact.id}`, { method: 'DELETE' });
            await client.invalidateQueries({ queryKey: ['contacts'] });
          }}
        />
      </td>
    </tr>
  );
}

function ImportForm() {
  const client = useQueryClient();
  const [csv, setCsv] = useState('');
  const [fileName, setFileName] = useState('');
  const upload = useMutation({
    mutationFn: () => api<One<ImportReport>>('/contacts/import', { method: 'POST', text: { contentType: 'text/csv', body: csv } }),
    onSuccess: () => client.invalidateQueries({ queryKey: ['contacts'] }),
  });
  const report = upload.data?.data;
  return (
    <form
      className="card"
      aria-labelledby="import-title"
      onSubmit={(event) => {
        event.preventDefault();
        upload.mutate();
      }}
    >
      <h2 id="import-title" className="h3">
        Import contacts from CSV
      </h2>
      <p className="small muted">
        The first line names the columns <code>name</code> and <code>phoneNumber</code> (other columns are ignored). Valid new rows are added all at
        once; duplicates are skipped and invalid rows are listed below with their line numbers.
      </p>
      <Field label="CSV file">
        {(props) => (
          <input
            {...props}
            type="file"
            accept=".csv,text/csv,text/plain"
            onChange={async (e) => {
              const file = e.target.files?.[0];
              if (!file) return;
              setFileName(file.name);
              setCsv(await file.text());
            }}
          />
        )}
      </Field>
      <Field label="…or paste the CSV" hint={fileName ? `Loaded ${fileName}.` : undefined}>
        {(props) => <textarea {...props} className="mono" rows={5} value={csv} onChange={(e) => setCsv(e.target.value)} placeholder={'name,phoneNumber\nAna,+62 812 3456 7890'} />}
      </Field>
      <button type="submit" className="button primary" disabled={upload.isPending || csv.trim() === ''}>
        {upload.isPending ? 'Importing…' : 'Import'}
      </button>
      <ErrorBox error={upload.error} title="Nothing was imported." />
      {report ? (
        <div className="import-report">
          <Notice tone={report.rejected.length > 0 ? 'warning' : 'success'}>
            {report.totalRows} row{report.totalRows === 1 ? '' : 's'}: <strong>{report.created} added</strong>, {report.skipped.length} skipped,{' '}
            {report.rejected.length} rejected.
          </Notice>
          {report.skipped.length + report.rejected.length > 0 ? (
            <DataTable caption="Rows not added" columns={['Line', 'Outcome', 'Why']} showCaption>
              {[
                ...report.rejected.map((row) => ({ line: row.line, outcome: 'Rejected', why: row.errors.map((error) => `${error.field} ${error.message}`).join('; ') })),
                ...report.skipped.map((row) => ({ line: row.line, outcome: 'Skipped', why: `${formatPhone(row.phoneNumber)}: ${row.reason}` })),
              ]
                .sort((a, b) => a.line - b.line)
                .map((row) => (
                  <tr key={`${row.outcome}-${row.line}`}>
                    <td data-label="Line">{row.line}</td>
                    <td data-label="Outcome">{row.outcome}</td>
                    <td data-label="Why">{row.why}</td>
                  </tr>
                ))}
            </DataTable>
          ) : null}
        </div>
      ) : null}
    </form>
  );
}
