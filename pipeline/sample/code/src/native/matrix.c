/* Dense matrix multiplication with a cache-friendly loop order. */
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    size_t rows, cols;
    double *data;
} Matrix;

Matrix matrix_new(size_t rows, size_t cols) {
    Matrix m = {rows, cols, calloc(rows * cols, sizeof(double))};
    if (!m.data) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return m;
}

/* i-k-j order: the inner loop walks both b and c contiguously. */
void matrix_mul(const Matrix *a, const Matrix *b, Matrix *c) {
    for (size_t i = 0; i < a->rows; i++) {
        for (size_t k = 0; k < a->cols; k++) {
            double aik = a->data[i * a->cols + k];
            for (size_t j = 0; j < b->cols; j++) {
                c->data[i * c->cols + j] += aik * b->data[k * b->cols + j];
            }
        }
    }
}

void matrix_free(Matrix *m) {
    free(m->data);
    m->data = NULL;
}
