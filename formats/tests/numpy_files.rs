//! The `.npy` reader on files numpy itself wrote (`np.save`, numpy 2.x; the script is in
//! this file's doc): the layouts the hand-written reader must agree with.
//!
//! ```python
//! np.save('f4.npy', np.arange(6, dtype=np.float32).reshape(2, 3))
//! np.save('f2.npy', np.array([[0.5, -1], [2, 3]], dtype=np.float16))
//! np.save('f8-big.npy', np.array([[1.0, 2.0]], dtype='>f8'))
//! np.save('labels-i8.npy', np.array([0, 2, 1], dtype=np.int64))
//! np.save('u2-labels-column.npy', np.array([[3], [1]], dtype=np.uint16))
//! np.save('fortran.npy', np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
//! np.save('f4-3d.npy', np.zeros((2, 2, 2), dtype=np.float32))
//! ```

mod support;

use std::path::PathBuf;

use support::crate_dir;

use taks_formats::npy::{Matrix, read_labels, read_matrix};

fn file(name: &str) -> PathBuf {
    crate_dir().join("tests/numpy").join(name)
}

#[test]
fn matrices_numpy_saved_read_back_exactly() {
    let m = |rows, cols, values: &[f32]| Matrix {
        rows,
        cols,
        values: values.to_vec(),
    };
    assert_eq!(
        read_matrix(&file("f4.npy")).unwrap(),
        m(2, 3, &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    );
    assert_eq!(
        read_matrix(&file("f2.npy")).unwrap(),
        m(2, 2, &[0.5, -1.0, 2.0, 3.0])
    );
    assert_eq!(
        read_matrix(&file("f8-big.npy")).unwrap(),
        m(1, 2, &[1.0, 2.0])
    );
}

#[test]
fn labels_numpy_saved_read_back_exactly() {
    assert_eq!(read_labels(&file("labels-i8.npy")).unwrap(), vec![0, 2, 1]);
    assert_eq!(
        read_labels(&file("u2-labels-column.npy")).unwrap(),
        vec![3, 1]
    );
}

#[test]
fn what_numpy_can_save_but_an_audit_cannot_use_is_refused() {
    let e = read_matrix(&file("fortran.npy")).unwrap_err().to_string();
    assert!(e.contains("fortran.npy") && e.contains("Fortran"), "{e}");
    let e = read_matrix(&file("f4-3d.npy")).unwrap_err().to_string();
    assert!(
        e.contains("shape [2, 2, 2]") && e.contains("2-D matrix"),
        "{e}"
    );
    let e = read_matrix(&file("labels-i8.npy")).unwrap_err().to_string();
    assert!(e.contains("2-D matrix"), "{e}");
}
