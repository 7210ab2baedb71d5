// A form's fields are read from the form when it is submitted, never from the last render:
// a click can land before the typing that preceded it is rendered (or while a re-render moves
// the row that holds the field), and the form still holds what the user sees.
export function submitted(e: Event): (name: string) => string {
  e.preventDefault();
  const form = new FormData(e.currentTarget as HTMLFormElement);
  return (name) => String(form.get(name) ?? "");
}
