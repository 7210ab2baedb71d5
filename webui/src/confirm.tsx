import { useEffect, useRef, useState } from "preact/hooks";

// A destructive action asks first: the button opens a modal dialog that says what will happen,
// and only its confirm button acts (Escape or Cancel leave everything as it was). The dialog is
// in the page only while open.
export function ConfirmButton(props: {
  label: string;
  question: string;
  confirm: string;
  onConfirm: () => void | Promise<void>;
  id?: string;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const title = `${props.id ?? props.label}-confirm-title`.replace(/\s+/g, "-");
  useEffect(() => {
    if (open && dialog.current && !dialog.current.open) dialog.current.showModal();
  }, [open]);
  const close = () => {
    dialog.current?.close();
    setOpen(false);
  };
  return (
    <>
      <button type="button" data-action={props.label} aria-haspopup="dialog" onClick={() => setOpen(true)}>
        {props.label}</button>
      {open && (
        <dialog ref={dialog} aria-labelledby={title} class="confirm-dialog" onClose={() => setOpen(false)}>
          <h2 id={title}>{props.question}</h2>
          <form method="dialog" onSubmit={async (e) => {
            e.preventDefault();
            setBusy(true);
            try {
              await props.onConfirm();
            } finally {
              setBusy(false);
              close();
            }
          }}>
            <button type="submit" disabled={busy}>{props.confirm}</button>{" "}
            <button type="button" onClick={close}>Cancel</button>
          </form>
        </dialog>
      )}
    </>
  );
}
