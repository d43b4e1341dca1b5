// The one script of the hosted pages (docs/platform/account-center.md "Passkeys"): it runs the WebAuthn
// ceremony the page describes and posts the browser's answer with the page's own form. Served from this
// API at PASSKEY_SCRIPT_PATH, allowed by the page's CSP through a per-response nonce and pinned by its
// Subresource Integrity digest; it reads only the form's data attributes, writes only the form's fields
// and a status text (no HTML sinks, so the CSP can also require Trusted Types), and calls nothing but
// navigator.credentials and the form's submit.
import { createHash } from 'node:crypto';

export const PASSKEY_SCRIPT_PATH = '/v1/account-center/passkey.js';

export const PASSKEY_SCRIPT = `'use strict';
(function () {
  var form = document.getElementById('passkey-form');
  var start = document.getElementById('passkey-start');
  var status = document.getElementById('passkey-status');
  if (!form || !start || !window.PublicKeyCredential) {
    if (status) status.textContent = 'This browser cannot use passkeys.';
    return;
  }
  function dec(s) {
    var b = atob(s.replace(/-/g, '+').replace(/_/g, '/') + '===='.slice(0, (4 - (s.length % 4)) % 4));
    var out = new Uint8Array(b.length);
    for (var i = 0; i < b.length; i++) out[i] = b.charCodeAt(i);
    return out;
  }
  function enc(buf) {
    var bytes = new Uint8Array(buf), s = '';
    for (var i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]);
    return btoa(s).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
  }
  function ids(list) {
    return (list || []).map(function (c) { return { type: 'public-key', id: dec(c.id), transports: c.transports }; });
  }
  function set(name, value) { form.elements.namedItem(name).value = value; }
  var o = JSON.parse(form.getAttribute('data-options'));
  start.addEventListener('click', function () {
    start.disabled = true;
    status.textContent = 'Waiting for your passkey...';
    var run = form.getAttribute('data-ceremony') === 'create'
      ? navigator.credentials.create({ publicKey: {
          rp: o.rp, user: { id: dec(o.user.id), name: o.user.name, displayName: o.user.displayName }, challenge: dec(o.challenge),
          pubKeyCredParams: o.pubKeyCredParams, timeout: o.timeout, excludeCredentials: ids(o.excludeCredentials),
          authenticatorSelection: o.authenticatorSelection, attestation: o.attestation } }).then(function (c) {
          set('id', enc(c.rawId));
          set('client_data_json', enc(c.response.clientDataJSON));
          set('attestation_object', enc(c.response.attestationObject));
          set('transports', (c.response.getTransports ? c.response.getTransports() : []).join(','));
        })
      : navigator.credentials.get({ publicKey: {
          challenge: dec(o.challenge), rpId: o.rpId, timeout: o.timeout, userVerification: o.userVerification, allowCredentials: ids(o.allowCredentials) } }).then(function (c) {
          set('id', enc(c.rawId));
          set('authenticator_data', enc(c.response.authenticatorData));
          set('client_data_json', enc(c.response.clientDataJSON));
          set('signature', enc(c.response.signature));
        });
    run.then(function () { form.submit(); }, function (e) {
      start.disabled = false;
      status.textContent = 'Your passkey did not answer (' + e.name + '). Try again.';
    });
  });
  // The page serves the button disabled: it does nothing until this script has taken it.
  start.disabled = false;
})();
`;

/** The script's Subresource Integrity digest (the script element's `integrity`). */
export const PASSKEY_SCRIPT_INTEGRITY = `sha256-${createHash('sha256').update(PASSKEY_SCRIPT).digest('base64')}`;
