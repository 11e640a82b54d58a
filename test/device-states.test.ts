import { describe, expect, it } from 'vitest';
import { advance, allowedFrom, DEVICE_EVENTS, DEVICE_STATUSES, isActive, nextStatus, TRANSITIONS } from '../src/devices/device-states.js';

describe('device states (pure)', () => {
  it('connected enters CONNECTED from PENDING or DISCONNECTED only', () => {
    expect(allowedFrom('connected')).toEqual(['PENDING', 'DISCONNECTED']);
    expect(nextStatus('connected', 'PENDING')).toBe('CONNECTED');
    expect(nextStatus('connected', 'DISCONNECTED')).toBe('CONNECTED');
    expect(nextStatus('connected', 'CONNECTED')).toBeUndefined();
    expect(nextStatus('connected', 'LOGGED_OUT')).toBeUndefined();
  });

  it('a dropped connection leaves CONNECTED only, for DISCONNECTED', () => {
    expect(allowedFrom('disconnected')).toEqual(['CONNECTED']);
    expect(nextStatus('disconnected', 'CONNECTED')).toBe('DISCONNECTED');
    expect(advance('disconnected', 'PENDING')).toBe('PENDING');
  });

  it('logout ends LOGGED_OUT from every state but LOGGED_OUT', () => {
    expect(allowedFrom('logout')).toEqual(['PENDING', 'CONNECTED', 'DISCONNECTED']);
    for (const status of allowedFrom('logout')) expect(nextStatus('logout', status)).toBe('LOGGED_OUT');
    expect(advance('logout', 'LOGGED_OUT')).toBe('LOGGED_OUT');
  });

  it('stopped: a linked device shows DISCONNECTED, a linking one stays PENDING, LOGGED_OUT is left alone', () => {
    expect(nextStatus('stopped', 'CONNECTED')).toBe('DISCONNECTED');
    expect(nextStatus('stopped', 'DISCONNECTED')).toBe('DISCONNECTED');
    expect(nextStatus('stopped', 'PENDING')).toBe('PENDING');
    expect(nextStatus('stopped', 'LOGGED_OUT')).toBeUndefined();
  });

  it('a warning changes no state, in any state', () => {
    for (const status of DEVICE_STATUSES) expect(nextStatus('warning', status)).toBe(status);
  });

  it('a QR code is shown only while PENDING, and is not a device.status event', () => {
    expect(allowedFrom('qr')).toEqual(['PENDING']);
    expect(TRANSITIONS.qr.announce).toBe('never');
  });

  it('removed goes LOGGED_OUT from any state, announced only when the status changes', () => {
    expect(allowedFrom('removed')).toEqual([...DEVICE_STATUSES]);
    for (const status of DEVICE_STATUSES) expect(nextStatus('removed', status)).toBe('LOGGED_OUT');
    expect(TRANSITIONS.removed.announce).toBe('whenStatusChanges');
  });

  it('relink is the only way out of LOGGED_OUT, back to PENDING', () => {
    expect(allowedFrom('relink')).toEqual(['LOGGED_OUT']);
    expect(nextStatus('relink', 'LOGGED_OUT')).toBe('PENDING');
    const leaveLoggedOut = DEVICE_EVENTS.filter((event) => {
      const to = nextStatus(event, 'LOGGED_OUT');
      return to !== undefined && to !== 'LOGGED_OUT';
    });
    expect(leaveLoggedOut).toEqual(['relink']);
  });

  it('only connected enters CONNECTED', () => {
    const entering = DEVICE_EVENTS.filter((event) => DEVICE_STATUSES.some((from) => from !== 'CONNECTED' && nextStatus(event, from) === 'CONNECTED'));
    expect(entering).toEqual(['connected']);
  });

  it('active (counts against the plan, may be leased) is every state but LOGGED_OUT', () => {
    expect(DEVICE_STATUSES.filter(isActive)).toEqual(['PENDING', 'CONNECTED', 'DISCONNECTED']);
  });
});
