// The second factor's gate on new sessions (auth/sessions.ts): a sign-in that has not given a second
// factor is held as a pending ticket when the project asks for one (optional: users who enrolled;
// required: everyone, enrolling first when they have none). Added after the ban gate, so a banned user
// is refused before any second factor is asked.
import type { SignInGate } from '../sessions.js';
import type { TwoFactorService } from './service.js';

export const twoFactorGate = (service: TwoFactorService): SignInGate => ({
  admit: (a) => service.admit(a),
});
