// Route schemas shared by every area: the one error shape ({error, code}, and the email id where one was recorded).
export const errorSchema = {
  $id: 'Error',
  type: 'object',
  required: ['error', 'code'],
  properties: {
    error: { type: 'string' },
    code: { type: 'string' },
    id: { type: 'string' },
    // Resend's names for the same answer (its SDK reads these).
    name: { type: 'string' },
    message: { type: 'string' },
    statusCode: { type: 'integer' },
  },
} as const;
