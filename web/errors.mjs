// FucinaError lives in its own module so that the facade and the data helpers share one class.
export class FucinaError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'FucinaError';
    this.code = code;  // the C++ ErrorCode name, e.g. "ShapeMismatch"
  }
}
