/**
 * The typed client in use: `WAYGATE_URL=http://localhost:3000 WAYGATE_TOKEN=wg_… npx tsx client/example.ts`
 * adds a contact, sends it a text, sends a text to a group (a bulk job) and follows the job.
 * With WAYGATE_WEBHOOK_SECRET set it also listens on :4000 and prints each verified event.
 */
import http from 'node:http';
import { createWaygateClient, verifyWebhook, WebhookVerificationError, type BulkJob } from './index.js';

const waygate = createWaygateClient({ baseUrl: process.env.WAYGATE_URL ?? 'http://localhost:3000', apiKey: process.env.WAYGATE_TOKEN ?? '' });

async function main(): Promise<void> {
  const contact = await waygate.POST('/contacts', { body: { name: 'Ana Putri', phoneNumber: '+62 812-3456-7890' } });
  if (contact.error) throw new Error(`${contact.error.error.code}: ${contact.error.error.message}`);
  console.log('contact', contact.data.data.id);

  const group = await waygate.POST('/groups', { body: { name: 'Example group', contactIds: [contact.data.data.id] } });
  if (group.error) throw new Error(group.error.error.message);

  for (const body of [
    { type: 'TEXT', content: 'Your order is ready', recipients: [contact.data.data.phoneNumber] },
    { type: 'TEXT', content: 'We open at 10 tomorrow', groupIds: [group.data.data.id] },
  ]) {
    const sent = await waygate.POST('/messages/send', { body });
    if (sent.error) throw new Error(`${sent.error.error.code}: ${sent.error.error.message}`);
    // One check tells the two answers apart.
    if (sent.data.async) console.log('bulk job', sent.data.jobId, 'done:', (await untilDone(sent.data.jobId)).status);
    else console.log('message', sent.data.message.id, sent.data.message.status);
  }
}

async function untilDone(jobId: string): Promise<BulkJob> {
  for (;;) {
    const { data, error } = await waygate.GET('/messages/bulk-jobs/{id}', { params: { path: { id: jobId } } });
    if (error) throw new Error(error.error.message);
    if (data.data.status === 'COMPLETED' || data.data.status === 'CANCELLED') return data.data;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

function listen(secret: string): void {
  http
    .createServer((request, response) => {
      let body = '';
      request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      request.on('end', () => {
        try {
          const event = verifyWebhook({ secret, headers: request.headers, body });
          console.log('event', event.seq, event.type);
          response.writeHead(204).end();
        } catch (error) {
          response.writeHead(error instanceof WebhookVerificationError ? 401 : 400).end();
        }
      });
    })
    .listen(4000);
}

if (process.env.WAYGATE_WEBHOOK_SECRET) listen(process.env.WAYGATE_WEBHOOK_SECRET);
await main();
